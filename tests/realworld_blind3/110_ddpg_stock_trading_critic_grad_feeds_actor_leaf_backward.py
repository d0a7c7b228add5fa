"""DDPG stock-trading agent: Critic.train steps its optimizer and returns the mean input-weight gradient, Actor.train pushes it into the actor's last bias with a leaf .backward(), and the target networks follow by .data soft copies."""
# outcome: ok
# source: https://github.com/JoshuaWu1997/PyTorch-DDPG-Stock-Trading/blob/master/DDPG.py
# repo: JoshuaWu1997/PyTorch-DDPG-Stock-Trading
# category: trainer
import numpy as np
import torch

cuda = torch.device('cpu')  # torch.device('cuda') in the original
device = cuda


# ---- ou_noise.py ----
class OUNoise:
    """docstring for OUNoise"""

    def __init__(self, action_dimension, mu=0, theta=0.15, sigma=0.2):
        self.action_dimension = action_dimension
        self.mu = mu
        self.theta = theta
        self.sigma = sigma
        self.state = np.ones(self.action_dimension) * self.mu
        self.seeds = 0
        self.reset()

    def reset(self):
        self.state = np.ones(self.action_dimension) * self.mu
        self.seeds += 1
        np.random.seed(self.seeds)

    def noise(self):
        x = self.state
        dx = self.theta * (self.mu - x) + self.sigma * np.random.randn(len(x))
        self.state = x + dx
        return self.state


# ---- actor_critic.py ----
def hard_copy(target, source):
    for weight1, weight2 in zip(target, source):
        weight1.data = weight2.data.clone()


def soft_copy(target, source, w=0.01):
    for weight1, weight2 in zip(target, source):
        weight1.data = torch.add(
            weight1.data, torch.add(
                weight2.data, weight1.data, alpha=-1
            ), alpha=w)


class ActorNet(torch.nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super(ActorNet, self).__init__()
        self.nn = torch.nn.Sequential(
            torch.nn.Linear(input_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, output_dim),
            torch.nn.Softmax(dim=1)
        )

    def forward(self, x):
        out = self.nn(x)
        return out


class CriticNet(torch.nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super(CriticNet, self).__init__()
        self.nn2 = torch.nn.Sequential(
            torch.nn.Linear(hidden_dim + output_dim, hidden_dim),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden_dim, hidden_dim),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden_dim, 1)
        )
        self.nn1 = torch.nn.Sequential(
            torch.nn.Linear(input_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, hidden_dim),
            torch.nn.Softmax(dim=1),
        )

    def forward(self, a, x):
        x_out = self.nn1(x)
        ax = torch.cat((a, x_out), 1)
        out = self.nn2(ax)
        return out


class Actor:
    def __init__(self, time_dim, state_dim, action_dim, hidden_dim):
        self.actor = ActorNet(state_dim * (time_dim + 1), hidden_dim, action_dim).to(cuda)
        self.target = ActorNet(state_dim * (time_dim + 1), hidden_dim, action_dim).to(cuda)
        self.actor_weights = [params for params in self.actor.parameters()]
        self.target_weights = [params for params in self.target.parameters()]
        self.optimizer = torch.optim.Adam(self.actor.parameters())
        hard_copy(self.target_weights, self.actor_weights)

    def train(self, loss_grad):
        for _ in range(1):
            self.optimizer.zero_grad()
            self.actor_weights[-1].backward(-loss_grad)
            self.optimizer.step()

    def actor_action(self, state):
        self.actor.zero_grad()
        return self.actor(state)

    def target_action(self, state):
        self.target.zero_grad()
        return self.target(state)

    def update_target(self):
        soft_copy(self.target_weights, self.actor_weights)


class Critic:
    def __init__(self, time_dim, state_dim, action_dim, hidden_dim):
        self.action_dim = action_dim
        self.critic = CriticNet(state_dim * (time_dim + 1), hidden_dim, action_dim).to(cuda)
        self.target = CriticNet(state_dim * (time_dim + 1), hidden_dim, action_dim).to(cuda)
        self.critic_weights = [params for params in self.critic.parameters()]
        self.target_weights = [params for params in self.target.parameters()]
        self.optimizer = torch.optim.Adam(self.critic.parameters())
        self.loss = torch.tensor(0, device=cuda)
        hard_copy(self.target_weights, self.critic_weights)

    def train(self, y_batch, action_batch, state_batch):
        criterion = torch.nn.MSELoss()
        for _ in range(1):
            y_pred = self.critic(action_batch, state_batch)
            self.loss = criterion(y_pred, y_batch)
            self.optimizer.zero_grad()
            self.loss.backward()
            self.optimizer.step()
        return torch.mean(self.critic_weights[0].grad[:, :self.action_dim], dim=0)

    def target_q(self, next_action_batch, next_state_batch):
        self.target.zero_grad()
        return self.target(next_action_batch, next_state_batch).view(-1)

    def update_target(self):
        soft_copy(self.target_weights, self.critic_weights)


# ---- DDPG.py ----
GAMMA = 0.9999999993340943687843739933894


def min_max_scale(data):
    data_min = torch.min(data, 0).values.view(1, -1)
    data_max = torch.max(data, 0).values.view(1, -1)
    data_max[data_max - data_min == 0] = 0
    return (data - data_min) / (data_max - data_min)


class DDPG:
    """docstring for DDPG"""

    def __init__(self, env, time_steps, hidden_dim):
        self.name = 'DDPG'  # name for uploading results
        self.scale = env.asset
        self.unit = env.unit
        self.seed = env.rd_seed

        self.time_dim = time_steps
        self.state_dim = env.observation_space.shape[1]
        self.action_dim = env.action_space.shape[0]
        self.batch_size = 64
        self.memory_size = self.time_dim + self.batch_size * 10
        self.start_size = self.time_dim + self.batch_size * 2

        # Initialise actor & critic networks
        self.actor_network = Actor(self.time_dim, self.state_dim, self.action_dim, hidden_dim)
        self.critic_network = Critic(self.time_dim, self.state_dim, self.action_dim, hidden_dim)

        # Initialize replay buffer
        self.replay_state = torch.zeros((self.start_size - 1, 3, self.state_dim), device=cuda)
        self.replay_next_state = torch.zeros((self.start_size - 1, 3, self.state_dim), device=cuda)
        self.replay_action = torch.zeros((self.start_size - 1, 1, self.state_dim), device=cuda)
        self.replay_reward = torch.zeros((self.start_size - 1,), device=cuda)

        # Initialize a random process the Ornstein-Uhlenbeck process for action exploration
        self.exploration_noise = OUNoise(self.action_dim, sigma=0.01 / self.action_dim)
        self.initial()

    def initial(self):
        self.steps = 0
        self.action = torch.zeros(self.action_dim, device=cuda)
        self.replay_state = torch.zeros((self.start_size - 1, 3, self.state_dim), device=cuda)
        self.replay_next_state = torch.zeros((self.start_size - 1, 3, self.state_dim), device=cuda)
        self.replay_action = torch.zeros((self.start_size - 1, self.state_dim), device=cuda)
        self.replay_reward = torch.zeros((self.start_size - 1,), device=cuda)

    def train_on_batch(self):
        # Sample a random minibatch of N transitions from replay buffer
        sample = torch.randint(self.time_dim, self.replay_reward.shape[0], [self.batch_size], device=cuda)
        index = torch.stack([sample - i for i in range(self.time_dim, 0, -1)]).t().reshape(-1)

        state_data = min_max_scale(self.replay_state[:, 0, :])
        amount_data = min_max_scale(self.replay_state[:, 2, :])
        next_state_data = min_max_scale(self.replay_next_state[:, 0, :])
        next_amount_data = min_max_scale(self.replay_next_state[:, 2, :])

        state_batch = torch.index_select(state_data, 0, index).view(self.batch_size, -1)
        amount_data = torch.index_select(amount_data, 0, sample).view(self.batch_size, -1)
        state_batch = torch.cat([state_batch, amount_data], dim=1)
        next_state_batch = torch.index_select(next_state_data, 0, index).view(self.batch_size, -1)
        next_amount_data = torch.index_select(next_amount_data, 0, sample).view(self.batch_size, -1)
        next_state_batch = torch.cat([next_state_batch, next_amount_data], dim=1)
        action_batch = torch.index_select(self.replay_action / self.unit, 0, sample)
        reward_batch = torch.index_select(self.replay_reward, 0, sample)

        # Calculate y_batch
        next_action_batch = self.actor_network.target_action(next_state_batch)
        q_batch = self.critic_network.target_q(next_action_batch, next_state_batch)
        y_batch = torch.add(reward_batch, q_batch, alpha=GAMMA).view(-1, 1)

        # train actor-critic by target loss
        self.actor_network.train(
            self.critic_network.train(
                y_batch, action_batch, state_batch
            )
        )

        # Update target networks by soft update
        self.actor_network.update_target()
        self.critic_network.update_target()

    def perceive(self, state, action, reward, next_state, done):
        if self.steps < self.start_size - 1:
            self.replay_state[self.steps] = state
            self.replay_next_state[self.steps] = next_state
            self.replay_action[self.steps] = action
            self.replay_reward[self.steps] = reward
        else:
            if self.steps >= self.memory_size:
                self.replay_state = self.replay_state[1:]
                self.replay_next_state = self.replay_next_state[1:]
                self.replay_action = self.replay_action[1:]
                self.replay_reward = self.replay_reward[1:]
            self.replay_state = torch.cat((self.replay_state, state.unsqueeze(0)), dim=0)
            self.replay_next_state = torch.cat((self.replay_next_state, next_state.unsqueeze(0)), dim=0)
            self.replay_action = torch.cat((self.replay_action, action.unsqueeze(0)), dim=0)
            self.replay_reward = torch.cat((self.replay_reward, reward.unsqueeze(0)), dim=0)
        self.steps += 1

    def act(self, next_state, portfolio):
        if self.steps > self.start_size:
            next_state_data = min_max_scale(self.replay_next_state[:, 0, :])[-self.time_dim:].view(1, -1)
            next_amount_data = min_max_scale(self.replay_next_state[:, 2, :])[-1].view(1, -1)
            next_state_data = torch.cat([next_state_data, next_amount_data], dim=1)
            self.train_on_batch()
            allocation = self.actor_network.target_action(next_state_data).data.view(-1)
            allocation += torch.tensor(self.exploration_noise.noise().tolist(), device=cuda)
            allocation[allocation < 0] = 0
            allocation /= sum(allocation)
            allocation = torch.floor(
                portfolio * allocation / next_state[1, :] / self.unit
            ) * self.unit
            self.action = allocation
        return self.action.clone()


# ---- market.py (gym.Env and its spaces stood in; random prices in place of sh000016/*.csv) ----
class _Box:
    def __init__(self, low, high, shape):
        self.shape = shape


class MarketEnv:
    def __init__(self, data, seed, asset=1000000.00, unit=100):
        self.asset = asset
        self.unit = unit
        self.rate = 5e-4
        self.short_rate = 1e-3
        self.rd_seed = seed
        self.sh000016 = data[0][:, 0].ravel()
        self.data = torch.tensor([data[i][:, 1:].tolist() for i in range(3)], device=device).permute(1, 0, 2)

        self.stock_number = data[0].shape[1] - 1
        self.sample_size = data[0].shape[0]
        self.action_space = _Box(low=0, high=1, shape=(self.stock_number,))
        self.observation_space = _Box(low=0, high=1, shape=(3, self.stock_number,))

    def reset(self):
        self.n_step = 0
        self.state = self.data[self.n_step, :, :]
        self.position = torch.zeros(self.stock_number, device=device)
        self.cash = torch.tensor(self.asset, device=device)
        self.portfolio = torch.tensor(self.asset, device=device)
        self.rewards = torch.tensor([self.asset] * self.sample_size, device=device)
        self.cost = torch.zeros(self.sample_size, device=device)
        self.success = []
        self.available_cash = torch.tensor([self.asset] * self.sample_size, device=device)
        self.book = []
        return self.state

    def step(self, position: torch.Tensor):
        self.n_step += 1
        self.state = self.data[self.n_step, :, :]
        amount = position - self.position
        price = self.state[1, :].view(-1)  # price to buy
        price[amount < 0] = self.state[0, :][amount < 0]  # price to sell

        transaction_buy = torch.sum((amount * price)[amount > 0] * self.rate)
        transaction_sell = -torch.sum((amount * price)[amount < 0] * (self.short_rate + self.rate))

        cost_buy = torch.sum((amount * price)[amount > 0])
        cost_sell = torch.sum((amount * price)[amount < 0])
        if self.cash < transaction_buy + cost_buy:
            self.success.append(False)
            self.cost[self.n_step] = transaction_sell
            self.position[amount < 0] = position[amount < 0]
            self.cash -= cost_sell + transaction_sell
        else:
            self.success.append(True)
            self.cost[self.n_step] = transaction_sell + transaction_buy
            self.position = position
            self.cash -= cost_sell + transaction_sell + cost_buy + transaction_buy

        portfolio = self.cash + torch.sum(self.state[0, :] * self.position)
        reward = portfolio - self.portfolio

        self.portfolio = portfolio
        self.rewards[self.n_step] = portfolio
        self.available_cash[self.n_step] = self.cash
        self.book.append(amount.cpu().numpy().ravel().tolist())
        if self.n_step == self.sample_size - 1:
            done = True
        else:
            done = False
        return self.state, reward, done, {}


# ---- DDPG-agent.py ----
def train(Train_Env, Epoch):
    agent = DDPG(train_env, lb, node)
    for t in range(Epoch):
        print('epoch:', t)
        state, done = Train_Env.reset(), False
        while not done:
            action = agent.act(state, Train_Env.portfolio)
            next_state, reward, done, _ = Train_Env.step(action)
            agent.perceive(state, action, reward, next_state, done)
            state = next_state
        total_reward = Train_Env.rewards[-1]
        total_cost = sum(Train_Env.cost)
        print('DDPG: Evaluation Average Reward:', total_reward)
        print('DDPG: Average Cost: ', total_cost)
    return agent


if __name__ == '__main__':
    lb, node, epoch = 3, 16, 1  # 12, 1024, 201 in the original
    rng = np.random.RandomState(0)
    n_steps, n_stocks = 140, 4
    prices = 10 + np.cumsum(rng.randn(n_steps, n_stocks + 1) * 0.1, axis=0)
    raw_buy = prices * 1.001
    raw_sell = prices * 0.999
    raw_amount = rng.rand(n_steps, n_stocks + 1) * 1e4
    train_env = MarketEnv([raw_buy, raw_sell, raw_amount], 0)
    agent = train(train_env, epoch)
