"""PEARL (oyster) soft actor-critic step: one agent forward gives policy outputs and task_z; the KL loss is backwarded with retain_graph=True, then the Q loss; qf1/qf2/context optimizers step, and only afterwards min-Q on the new actions is computed with a fresh Q forward for the value and policy losses; the latent z is kept on the agent across the mini-batch loop and cut with `detach_z()` after each step."""
# outcome: ok
# source: https://github.com/katerakelly/oyster/blob/master/rlkit/torch/sac/sac.py
# repo: katerakelly/oyster
# category: trainer
# CPU run: rlkit's MetaRLAlgorithm / replay buffers / pytorch_util replaced by small inline
# stand-ins (random transition batches, a FlattenMlp and a TanhGaussianPolicy written inline);
# 2 tasks, tiny sizes, one _do_training call of two mini-batches.
import copy
from collections import OrderedDict

import numpy as np
import torch
import torch.optim as optim
from torch import nn as nn
import torch.nn.functional as F


# ---- stand-ins for rlkit.torch.pytorch_util ----
class ptu:
    device = torch.device('cpu')

    @staticmethod
    def zeros(*sizes):
        return torch.zeros(*sizes)

    @staticmethod
    def ones(*sizes):
        return torch.ones(*sizes)

    @staticmethod
    def get_numpy(t):
        return t.detach().cpu().numpy()

    @staticmethod
    def np_to_pytorch_batch(np_batch):
        return {k: torch.from_numpy(v).float() for k, v in np_batch.items()}

    @staticmethod
    def soft_update_from_to(source, target, tau):
        for target_param, param in zip(target.parameters(), source.parameters()):
            target_param.data.copy_(
                target_param.data * (1.0 - tau) + param.data * tau
            )


# ---- stand-ins for rlkit.torch.networks / sac.policies ----
class FlattenMlp(nn.Module):
    def __init__(self, hidden_sizes, input_size, output_size):
        super().__init__()
        self.fc0 = nn.Linear(input_size, hidden_sizes[0])
        self.last_fc = nn.Linear(hidden_sizes[0], output_size)
        self.output_size = output_size

    def forward(self, *inputs):
        h = torch.cat(inputs, dim=-1)
        return self.last_fc(F.relu(self.fc0(h)))

    def reset(self, num_tasks=1):
        pass

    def copy(self):
        return copy.deepcopy(self)


class TanhGaussianPolicy(nn.Module):
    def __init__(self, hidden_sizes, obs_dim, action_dim):
        super().__init__()
        self.fc0 = nn.Linear(obs_dim, hidden_sizes[0])
        self.last_fc = nn.Linear(hidden_sizes[0], action_dim)
        self.last_fc_log_std = nn.Linear(hidden_sizes[0], action_dim)

    def forward(self, obs, reparameterize=False, return_log_prob=False):
        h = F.relu(self.fc0(obs))
        mean = self.last_fc(h)
        log_std = torch.clamp(self.last_fc_log_std(h), -20, 2)
        std = torch.exp(log_std)
        normal = torch.distributions.Normal(mean, std)
        pre_tanh_value = normal.rsample()
        action = torch.tanh(pre_tanh_value)
        log_prob = normal.log_prob(pre_tanh_value) - torch.log(1 - action * action + 1e-6)
        log_prob = log_prob.sum(dim=1, keepdim=True)
        return (action, mean, log_std, log_prob, None, std, None, pre_tanh_value)


def create_stats_ordered_dict(name, data):
    return OrderedDict([(name + ' Mean', np.mean(data))])


class RandomReplay:
    def __init__(self, obs_dim, act_dim):
        self.obs_dim, self.act_dim = obs_dim, act_dim

    def random_batch(self, idx, batch_size, sequence=False):
        return dict(observations=np.random.randn(batch_size, self.obs_dim),
                    actions=np.random.uniform(-1, 1, (batch_size, self.act_dim)),
                    rewards=np.random.randn(batch_size, 1),
                    sparse_rewards=np.random.randn(batch_size, 1),
                    next_observations=np.random.randn(batch_size, self.obs_dim),
                    terminals=np.zeros((batch_size, 1)))


class MetaRLAlgorithm:
    def __init__(self, env, agent, train_tasks, eval_tasks, batch_size=8,
                 embedding_batch_size=8, embedding_mini_batch_size=4, reward_scale=5.0,
                 discount=0.99, obs_dim=4, act_dim=2):
        self.env = env
        self.agent = agent
        self.train_tasks = train_tasks
        self.eval_tasks = eval_tasks
        self.batch_size = batch_size
        self.embedding_batch_size = embedding_batch_size
        self.embedding_mini_batch_size = embedding_mini_batch_size
        self.reward_scale = reward_scale
        self.discount = discount
        self.replay_buffer = RandomReplay(obs_dim, act_dim)
        self.enc_replay_buffer = RandomReplay(obs_dim, act_dim)
        self.eval_statistics = None


# ---- rlkit/torch/sac/agent.py ----
def _product_of_gaussians(mus, sigmas_squared):
    '''
    compute mu, sigma of product of gaussians
    '''
    sigmas_squared = torch.clamp(sigmas_squared, min=1e-7)
    sigma_squared = 1. / torch.sum(torch.reciprocal(sigmas_squared), dim=0)
    mu = sigma_squared * torch.sum(mus / sigmas_squared, dim=0)
    return mu, sigma_squared


class PEARLAgent(nn.Module):

    def __init__(self,
                 latent_dim,
                 context_encoder,
                 policy,
                 cnn,
                 **kwargs
    ):
        super().__init__()
        self.latent_dim = latent_dim

        self.context_encoder = context_encoder
        self.policy = policy
        self.cnn = cnn

        self.recurrent = kwargs['recurrent']
        self.use_ib = kwargs['use_information_bottleneck']
        self.sparse_rewards = kwargs['sparse_rewards']
        self.use_next_obs_in_context = kwargs['use_next_obs_in_context']

        # initialize buffers for z dist and z
        # use buffers so latent context can be saved along with model weights
        self.register_buffer('z', torch.zeros(1, latent_dim))
        self.register_buffer('z_means', torch.zeros(1, latent_dim))
        self.register_buffer('z_vars', torch.zeros(1, latent_dim))

        self.clear_z()

    def clear_z(self, num_tasks=1):
        '''
        reset q(z|c) to the prior
        sample a new z from the prior
        '''
        # reset distribution over z to the prior
        mu = ptu.zeros(num_tasks, self.latent_dim)
        if self.use_ib:
            var = ptu.ones(num_tasks, self.latent_dim)
        else:
            var = ptu.zeros(num_tasks, self.latent_dim)
        self.z_means = mu
        self.z_vars = var
        # sample a new z from the prior
        self.sample_z()
        # reset the context collected so far
        self.context = None
        # reset any hidden state in the encoder network (relevant for RNN)
        self.context_encoder.reset(num_tasks)

    def detach_z(self):
        ''' disable backprop through z '''
        self.z = self.z.detach()
        if self.recurrent:
            self.context_encoder.hidden = self.context_encoder.hidden.detach()

    def compute_kl_div(self):
        ''' compute KL( q(z|c) || r(z) ) '''
        prior = torch.distributions.Normal(ptu.zeros(self.latent_dim), ptu.ones(self.latent_dim))
        posteriors = [torch.distributions.Normal(mu, torch.sqrt(var)) for mu, var in zip(torch.unbind(self.z_means), torch.unbind(self.z_vars))]
        kl_divs = [torch.distributions.kl.kl_divergence(post, prior) for post in posteriors]
        kl_div_sum = torch.sum(torch.stack(kl_divs))
        return kl_div_sum

    def infer_posterior(self, context):
        ''' compute q(z|c) as a function of input context and sample new z from it'''
        params = self.context_encoder(context)
        params = params.view(context.size(0), -1, self.context_encoder.output_size)
        # with probabilistic z, predict mean and variance of q(z | c)
        if self.use_ib:
            mu = params[..., :self.latent_dim]
            sigma_squared = F.softplus(params[..., self.latent_dim:])
            z_params = [_product_of_gaussians(m, s) for m, s in zip(torch.unbind(mu), torch.unbind(sigma_squared))]
            self.z_means = torch.stack([p[0] for p in z_params])
            self.z_vars = torch.stack([p[1] for p in z_params])
        # sum rather than product of gaussians structure
        else:
            self.z_means = torch.mean(params, dim=1)
        self.sample_z()

    def sample_z(self):
        if self.use_ib:
            posteriors = [torch.distributions.Normal(m, torch.sqrt(s)) for m, s in zip(torch.unbind(self.z_means), torch.unbind(self.z_vars))]
            z = [d.rsample() for d in posteriors]
            self.z = torch.stack(z)
        else:
            self.z = self.z_means

    def forward(self, obs, context):
        ''' given context, get statistics under the current policy of a set of observations '''
        self.infer_posterior(context)
        self.sample_z()

        task_z = self.z

        t, b, _ = obs.size()
        obs = obs.view(t * b, -1)
        task_z = [z.repeat(b, 1) for z in task_z]
        task_z = torch.cat(task_z, dim=0)

        # run policy, get log probs and new actions
        in_ = torch.cat([obs, task_z.detach()], dim=1)
        policy_outputs = self.policy(in_, reparameterize=True, return_log_prob=True)

        return policy_outputs, task_z

    @property
    def networks(self):
        return [self.context_encoder, self.policy]


# ---- rlkit/torch/sac/sac.py ----
class PEARLSoftActorCritic(MetaRLAlgorithm):
    def __init__(
            self,
            env,
            train_tasks,
            eval_tasks,
            latent_dim,
            nets,

            policy_lr=1e-3,
            qf_lr=1e-3,
            vf_lr=1e-3,
            context_lr=1e-3,
            kl_lambda=1.,
            policy_mean_reg_weight=1e-3,
            policy_std_reg_weight=1e-3,
            policy_pre_activation_weight=0.,
            optimizer_class=optim.Adam,
            recurrent=False,
            use_information_bottleneck=True,
            use_next_obs_in_context=False,
            sparse_rewards=False,

            soft_target_tau=1e-2,
            plotter=None,
            render_eval_paths=False,
            **kwargs
    ):
        super().__init__(
            env=env,
            agent=nets[0],
            train_tasks=train_tasks,
            eval_tasks=eval_tasks,
            **kwargs
        )

        self.soft_target_tau = soft_target_tau
        self.policy_mean_reg_weight = policy_mean_reg_weight
        self.policy_std_reg_weight = policy_std_reg_weight
        self.policy_pre_activation_weight = policy_pre_activation_weight

        self.recurrent = recurrent
        self.latent_dim = latent_dim
        self.qf_criterion = nn.MSELoss()
        self.vf_criterion = nn.MSELoss()
        self.kl_lambda = kl_lambda

        self.use_information_bottleneck = use_information_bottleneck
        self.sparse_rewards = sparse_rewards
        self.use_next_obs_in_context = use_next_obs_in_context

        self.qf1, self.qf2, self.vf = nets[1:]
        self.target_vf = self.vf.copy()

        self.policy_optimizer = optimizer_class(
            self.agent.policy.parameters(),
            lr=policy_lr,
        )
        self.qf1_optimizer = optimizer_class(
            self.qf1.parameters(),
            lr=qf_lr,
        )
        self.qf2_optimizer = optimizer_class(
            self.qf2.parameters(),
            lr=qf_lr,
        )
        self.vf_optimizer = optimizer_class(
            self.vf.parameters(),
            lr=vf_lr,
        )
        self.context_optimizer = optimizer_class(
            self.agent.context_encoder.parameters(),
            lr=context_lr,
        )

    ##### Data handling #####
    def unpack_batch(self, batch, sparse_reward=False):
        ''' unpack a batch and return individual elements '''
        o = batch['observations'][None, ...]
        a = batch['actions'][None, ...]
        if sparse_reward:
            r = batch['sparse_rewards'][None, ...]
        else:
            r = batch['rewards'][None, ...]
        no = batch['next_observations'][None, ...]
        t = batch['terminals'][None, ...]
        return [o, a, r, no, t]

    def sample_sac(self, indices):
        ''' sample batch of training data from a list of tasks for training the actor-critic '''
        batches = [ptu.np_to_pytorch_batch(self.replay_buffer.random_batch(idx, batch_size=self.batch_size)) for idx in indices]
        unpacked = [self.unpack_batch(batch) for batch in batches]
        # group like elements together
        unpacked = [[x[i] for x in unpacked] for i in range(len(unpacked[0]))]
        unpacked = [torch.cat(x, dim=0) for x in unpacked]
        return unpacked

    def sample_context(self, indices):
        ''' sample batch of context from a list of tasks from the replay buffer '''
        # make method work given a single task index
        if not hasattr(indices, '__iter__'):
            indices = [indices]
        batches = [ptu.np_to_pytorch_batch(self.enc_replay_buffer.random_batch(idx, batch_size=self.embedding_batch_size, sequence=self.recurrent)) for idx in indices]
        context = [self.unpack_batch(batch, sparse_reward=self.sparse_rewards) for batch in batches]
        # group like elements together
        context = [[x[i] for x in context] for i in range(len(context[0]))]
        context = [torch.cat(x, dim=0) for x in context]
        if self.use_next_obs_in_context:
            context = torch.cat(context[:-1], dim=2)
        else:
            context = torch.cat(context[:-2], dim=2)
        return context

    ##### Training #####
    def _do_training(self, indices):
        mb_size = self.embedding_mini_batch_size
        num_updates = self.embedding_batch_size // mb_size

        # sample context batch
        context_batch = self.sample_context(indices)

        # zero out context and hidden encoder state
        self.agent.clear_z(num_tasks=len(indices))

        # do this in a loop so we can truncate backprop in the recurrent encoder
        for i in range(num_updates):
            context = context_batch[:, i * mb_size: i * mb_size + mb_size, :]
            self._take_step(indices, context)

            # stop backprop
            self.agent.detach_z()

    def _min_q(self, obs, actions, task_z):
        q1 = self.qf1(obs, actions, task_z.detach())
        q2 = self.qf2(obs, actions, task_z.detach())
        min_q = torch.min(q1, q2)
        return min_q

    def _update_target_network(self):
        ptu.soft_update_from_to(self.vf, self.target_vf, self.soft_target_tau)

    def _take_step(self, indices, context):

        num_tasks = len(indices)

        # data is (task, batch, feat)
        obs, actions, rewards, next_obs, terms = self.sample_sac(indices)

        # run inference in networks
        policy_outputs, task_z = self.agent(obs, context)
        new_actions, policy_mean, policy_log_std, log_pi = policy_outputs[:4]

        # flattens out the task dimension
        t, b, _ = obs.size()
        obs = obs.view(t * b, -1)
        actions = actions.view(t * b, -1)
        next_obs = next_obs.view(t * b, -1)

        # Q and V networks
        # encoder will only get gradients from Q nets
        q1_pred = self.qf1(obs, actions, task_z)
        q2_pred = self.qf2(obs, actions, task_z)
        v_pred = self.vf(obs, task_z.detach())
        # get targets for use in V and Q updates
        with torch.no_grad():
            target_v_values = self.target_vf(next_obs, task_z)

        # KL constraint on z if probabilistic
        self.context_optimizer.zero_grad()
        if self.use_information_bottleneck:
            kl_div = self.agent.compute_kl_div()
            kl_loss = self.kl_lambda * kl_div
            kl_loss.backward(retain_graph=True)

        # qf and encoder update (note encoder does not get grads from policy or vf)
        self.qf1_optimizer.zero_grad()
        self.qf2_optimizer.zero_grad()
        rewards_flat = rewards.view(self.batch_size * num_tasks, -1)
        # scale rewards for Bellman update
        rewards_flat = rewards_flat * self.reward_scale
        terms_flat = terms.view(self.batch_size * num_tasks, -1)
        q_target = rewards_flat + (1. - terms_flat) * self.discount * target_v_values
        qf_loss = torch.mean((q1_pred - q_target) ** 2) + torch.mean((q2_pred - q_target) ** 2)
        qf_loss.backward()
        self.qf1_optimizer.step()
        self.qf2_optimizer.step()
        self.context_optimizer.step()

        # compute min Q on the new actions
        min_q_new_actions = self._min_q(obs, new_actions, task_z)

        # vf update
        v_target = min_q_new_actions - log_pi
        vf_loss = self.vf_criterion(v_pred, v_target.detach())
        self.vf_optimizer.zero_grad()
        vf_loss.backward()
        self.vf_optimizer.step()
        self._update_target_network()

        # policy update
        # n.b. policy update includes dQ/da
        log_policy_target = min_q_new_actions

        policy_loss = (
                log_pi - log_policy_target
        ).mean()

        mean_reg_loss = self.policy_mean_reg_weight * (policy_mean**2).mean()
        std_reg_loss = self.policy_std_reg_weight * (policy_log_std**2).mean()
        pre_tanh_value = policy_outputs[-1]
        pre_activation_reg_loss = self.policy_pre_activation_weight * (
            (pre_tanh_value**2).sum(dim=1).mean()
        )
        policy_reg_loss = mean_reg_loss + std_reg_loss + pre_activation_reg_loss
        policy_loss = policy_loss + policy_reg_loss

        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        self.policy_optimizer.step()

        # save some statistics for eval
        if self.eval_statistics is None:
            self.eval_statistics = OrderedDict()
            self.eval_statistics['QF Loss'] = np.mean(ptu.get_numpy(qf_loss))
            self.eval_statistics['VF Loss'] = np.mean(ptu.get_numpy(vf_loss))
            self.eval_statistics['Policy Loss'] = np.mean(ptu.get_numpy(
                policy_loss
            ))
            self.eval_statistics.update(create_stats_ordered_dict(
                'Q Predictions',
                ptu.get_numpy(q1_pred),
            ))


if __name__ == '__main__':
    torch.manual_seed(0)
    np.random.seed(0)
    obs_dim, action_dim, latent_dim, net_size = 4, 2, 3, 16
    context_encoder_input_dim = obs_dim + action_dim + 1
    context_encoder_output_dim = latent_dim * 2
    context_encoder = FlattenMlp(hidden_sizes=[net_size], input_size=context_encoder_input_dim,
                                 output_size=context_encoder_output_dim)
    qf1 = FlattenMlp(hidden_sizes=[net_size], input_size=obs_dim + action_dim + latent_dim, output_size=1)
    qf2 = FlattenMlp(hidden_sizes=[net_size], input_size=obs_dim + action_dim + latent_dim, output_size=1)
    vf = FlattenMlp(hidden_sizes=[net_size], input_size=obs_dim + latent_dim, output_size=1)
    policy = TanhGaussianPolicy(hidden_sizes=[net_size], obs_dim=obs_dim + latent_dim, action_dim=action_dim)
    agent = PEARLAgent(latent_dim, context_encoder, policy, None, recurrent=False,
                       use_information_bottleneck=True, sparse_rewards=False,
                       use_next_obs_in_context=False)
    algorithm = PEARLSoftActorCritic(
        env=None, train_tasks=[0, 1], eval_tasks=[2], latent_dim=latent_dim,
        nets=[agent, qf1, qf2, vf], obs_dim=obs_dim, act_dim=action_dim,
    )
    algorithm._do_training([0, 1])
    print(algorithm.eval_statistics)
