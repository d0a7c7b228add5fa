"""LAP_TD3.train: critic step on the Huber TD loss, the new priorities read from the pre-step td losses through .data, then (every policy_freq) the actor loss on a fresh critic.Q1 forward, actor step, target updates through .data."""
# outcome: ok
# source: https://github.com/sfujim/LAP-PAL/blob/a649b1b977e979ed0e49d67335d3c79b555e9cfb/continuous/LAP_TD3.py
# repo: sfujim/LAP-PAL
# category: trainer
import argparse
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- utils.py ----
class PrioritizedReplayBuffer():
	def __init__(self, state_dim, action_dim, max_size=int(1e6)):
		self.max_size = max_size
		self.ptr = 0
		self.size = 0

		self.state = np.zeros((max_size, state_dim))
		self.action = np.zeros((max_size, action_dim))
		self.next_state = np.zeros((max_size, state_dim))
		self.reward = np.zeros((max_size, 1))
		self.not_done = np.zeros((max_size, 1))

		self.tree = SumTree(max_size)
		self.max_priority = 1.0
		self.beta = 0.4

		self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


	def add(self, state, action, next_state, reward, done):
		self.state[self.ptr] = state
		self.action[self.ptr] = action
		self.next_state[self.ptr] = next_state
		self.reward[self.ptr] = reward
		self.not_done[self.ptr] = 1. - done

		self.tree.set(self.ptr, self.max_priority)

		self.ptr = (self.ptr + 1) % self.max_size
		self.size = min(self.size + 1, self.max_size)


	def sample(self, batch_size):
		ind = self.tree.sample(batch_size)

		weights = self.tree.levels[-1][ind] ** -self.beta
		weights /= weights.max()

		self.beta = min(self.beta + 2e-7, 1) # Hardcoded: 0.4 + 2e-7 * 3e6 = 1.0. Only used by PER.

		return (
			torch.FloatTensor(self.state[ind]).to(self.device),
			torch.FloatTensor(self.action[ind]).to(self.device),
			torch.FloatTensor(self.next_state[ind]).to(self.device),
			torch.FloatTensor(self.reward[ind]).to(self.device),
			torch.FloatTensor(self.not_done[ind]).to(self.device),
			ind,
			torch.FloatTensor(weights).to(self.device).reshape(-1, 1)
		)


	def update_priority(self, ind, priority):
		self.max_priority = max(priority.max(), self.max_priority)
		self.tree.batch_set(ind, priority)


class SumTree(object):
	def __init__(self, max_size):
		self.levels = [np.zeros(1)]
		# Tree construction
		# Double the number of nodes at each level
		level_size = 1
		while level_size < max_size:
			level_size *= 2
			self.levels.append(np.zeros(level_size))
			

	# Batch binary search through sum tree
	# Sample a priority between 0 and the max priority
	# and then search the tree for the corresponding index
	def sample(self, batch_size):
		value = np.random.uniform(0, self.levels[0][0], size=batch_size)
		ind = np.zeros(batch_size, dtype=int)
		
		for nodes in self.levels[1:]:
			ind *= 2
			left_sum = nodes[ind]
			
			is_greater = np.greater(value, left_sum)
			# If value > left_sum -> go right (+1), else go left (+0)
			ind += is_greater
			# If we go right, we only need to consider the values in the right tree
			# so we subtract the sum of values in the left tree
			value -= left_sum * is_greater
		
		return ind


	def set(self, ind, new_priority):
		priority_diff = new_priority - self.levels[-1][ind]

		for nodes in self.levels[::-1]:
			np.add.at(nodes, ind, priority_diff)
			ind //= 2


	def batch_set(self, ind, new_priority):
		# Confirm we don't increment a node twice
		ind, unique_ind = np.unique(ind, return_index=True)
		priority_diff = new_priority[unique_ind] - self.levels[-1][ind]
		
		for nodes in self.levels[::-1]:
			np.add.at(nodes, ind, priority_diff)
			ind //= 2


# ---- LAP_TD3.py ----
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Actor(nn.Module):
	def __init__(self, state_dim, action_dim, max_action):
		super(Actor, self).__init__()

		self.l1 = nn.Linear(state_dim, 256)
		self.l2 = nn.Linear(256, 256)
		self.l3 = nn.Linear(256, action_dim)
		
		self.max_action = max_action
		

	def forward(self, state):
		a = F.relu(self.l1(state))
		a = F.relu(self.l2(a))
		return self.max_action * torch.tanh(self.l3(a))


	def act(self, state):
		a = F.relu(self.l1(state))
		a = F.relu(self.l2(a))
		a = self.l3(a)
		return self.max_action * torch.tanh(a), a


class Critic(nn.Module):
	def __init__(self, state_dim, action_dim):
		super(Critic, self).__init__()

		# Q1 architecture
		self.l1 = nn.Linear(state_dim + action_dim, 256)
		self.l2 = nn.Linear(256, 256)
		self.l3 = nn.Linear(256, 1)

		# Q2 architecture
		self.l4 = nn.Linear(state_dim + action_dim, 256)
		self.l5 = nn.Linear(256, 256)
		self.l6 = nn.Linear(256, 1)


	def forward(self, state, action):
		sa = torch.cat([state, action], 1)

		q1 = F.relu(self.l1(sa))
		q1 = F.relu(self.l2(q1))
		q1 = self.l3(q1)

		q2 = F.relu(self.l4(sa))
		q2 = F.relu(self.l5(q2))
		q2 = self.l6(q2)
		return q1, q2


	def Q1(self, state, action):
		sa = torch.cat([state, action], 1)

		q1 = F.relu(self.l1(sa))
		q1 = F.relu(self.l2(q1))
		q1 = self.l3(q1)
		return q1


class LAP_TD3(object):
	def __init__(
		self,
		state_dim,
		action_dim,
		max_action,
		discount=0.99,
		tau=0.005,
		policy_noise=0.2,
		noise_clip=0.5,
		policy_freq=2,
		alpha=0.4,
		min_priority=1
	):

		self.actor = Actor(state_dim, action_dim, max_action).to(device)
		self.actor_target = copy.deepcopy(self.actor)
		self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

		self.critic = Critic(state_dim, action_dim).to(device)
		self.critic_target = copy.deepcopy(self.critic)
		self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

		self.max_action = max_action
		self.discount = discount
		self.tau = tau
		self.policy_noise = policy_noise
		self.noise_clip = noise_clip
		self.policy_freq = policy_freq
		self.alpha = alpha
		self.min_priority = min_priority

		self.total_it = 0


	def select_action(self, state, test=False):
		state = torch.FloatTensor(state.reshape(1, -1)).to(device)
		return self.actor(state).cpu().data.numpy().flatten()


	def train(self, replay_buffer, batch_size=256):
		self.total_it += 1

		# Sample replay buffer
		state, action, next_state, reward, not_done, ind, weights = replay_buffer.sample(batch_size)

		with torch.no_grad():
			# Select action according to policy and add clipped noise
			noise = (
				torch.randn_like(action) * self.policy_noise
			).clamp(-self.noise_clip, self.noise_clip)
			
			next_action = (
				self.actor_target(next_state) + noise
			).clamp(-self.max_action, self.max_action)

			# Compute the target Q value
			target_Q1, target_Q2 = self.critic_target(next_state, next_action)
			target_Q = torch.min(target_Q1, target_Q2)
			target_Q = reward + not_done * self.discount * target_Q

		# Get current Q estimates
		current_Q1, current_Q2 = self.critic(state, action)

		td_loss1 = (current_Q1 - target_Q).abs()
		td_loss2 = (current_Q2 - target_Q).abs()

		# Compute critic loss
		critic_loss = self.huber(td_loss1) + self.huber(td_loss2)
		
		# Optimize the critic
		self.critic_optimizer.zero_grad()
		critic_loss.backward()
		self.critic_optimizer.step()
		
		priority = torch.max(td_loss1, td_loss2).clamp(min=self.min_priority).pow(self.alpha).cpu().data.numpy().flatten()

		replay_buffer.update_priority(ind, priority)

		# Delayed policy updates
		if self.total_it % self.policy_freq == 0:

			actor_loss = -self.critic.Q1(state, self.actor(state)).mean()

			# Optimize the actor 
			self.actor_optimizer.zero_grad()
			actor_loss.backward()
			self.actor_optimizer.step()

			# Update the frozen target models
			for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
				target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

			for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
				target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)


	def huber(self, x):
		return torch.where(x < self.min_priority, 0.5 * x.pow(2), self.min_priority * x).mean()


# ---- main.py, shrunk: HalfCheetah-shaped random transitions instead of gym, 256-unit layers kept,
# start_timesteps 8, 4 training iterations ----
if __name__ == "__main__":
	parser = argparse.ArgumentParser()
	parser.add_argument("--algorithm", default="LAP_TD3")			# Algorithm nameu
	parser.add_argument("--env", default="HalfCheetah-v3")			# OpenAI gym environment name
	parser.add_argument("--seed", default=0, type=int)				# Sets Gym, PyTorch and Numpy seeds
	parser.add_argument("--start_timesteps", default=8, type=int)	# Time steps initial random policy is used
	parser.add_argument("--max_timesteps", default=12, type=int)	# Max time steps to run environment
	parser.add_argument("--expl_noise", default=0.1)				# Std of Gaussian exploration noise
	parser.add_argument("--batch_size", default=16, type=int)		# Batch size for both actor and critic
	parser.add_argument("--discount", default=0.99)					# Discount factor
	parser.add_argument("--tau", default=0.005)						# Target network update rate
	parser.add_argument("--policy_noise", default=0.2)				# Noise added to target policy during critic update
	parser.add_argument("--noise_clip", default=0.5)				# Range to clip target policy noise
	parser.add_argument("--policy_freq", default=2, type=int)		# Frequency of delayed policy updates
	parser.add_argument("--alpha", default=0.4)						# Priority = TD^alpha (only used by LAP/PAL)
	parser.add_argument("--min_priority", default=1, type=int)		# Minimum priority (set to 1 in paper, only used by LAP/PAL)
	args = parser.parse_args([])

	torch.manual_seed(args.seed)
	np.random.seed(args.seed)

	state_dim = 17
	action_dim = 6
	max_action = 1.0

	kwargs = {
		"state_dim": state_dim,
		"action_dim": action_dim,
		"max_action": max_action,
		"discount": args.discount,
		"tau": args.tau,
		"policy_noise": args.policy_noise * max_action,
		"noise_clip": args.noise_clip * max_action,
		"policy_freq": args.policy_freq
	}

	kwargs["alpha"] = args.alpha
	kwargs["min_priority"] = args.min_priority

	policy = LAP_TD3(**kwargs)
	replay_buffer = PrioritizedReplayBuffer(state_dim, action_dim, max_size=64)

	state = np.random.randn(state_dim)
	for t in range(int(args.max_timesteps)):
		if t < args.start_timesteps:
			action = np.random.uniform(-max_action, max_action, action_dim)
		else:
			action = (
				policy.select_action(np.array(state))
				+ np.random.normal(0, max_action * args.expl_noise, size=action_dim)
			).clip(-max_action, max_action)

		next_state, reward, done_bool = np.random.randn(state_dim), np.random.randn(), 0.
		replay_buffer.add(state, action, next_state, reward, done_bool)
		state = next_state

		if t >= args.start_timesteps: #>=
			policy.train(replay_buffer, args.batch_size)
