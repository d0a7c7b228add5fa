"""SPiRL's SACAgent.update, fixed as upstream did (commit "update pytorch version"): the policy update moved before the critic updates."""
# outcome: ok
# source: https://github.com/clvrai/spirl/issues/15
# repo: clvrai/spirl
# category: trainer
# twin: 404_spirl_sac_agent_policy_update_after_critics.py
import os
from functools import partial

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam, SGD


# ---- spirl/utils/general_utils.py ----
class AttrDict(dict):
    __setattr__ = dict.__setitem__

    def __getattr__(self, attr):
        # Take care that getattr() raises AttributeError, not KeyError.
        # Required e.g. for hasattr(), deepcopy and OrderedDict.
        try:
            return self.__getitem__(attr)
        except KeyError:
            raise AttributeError("Attribute %r not found" % attr)

    def __getstate__(self):
        return self

    def __setstate__(self, d):
        self = d


class ParamDict(AttrDict):
    def overwrite(self, new_params):
        for param in new_params:
            # print('overriding param {} to value {}'.format(param, new_params[param]))
            self.__setattr__(param, new_params[param])
        return self


def get_clipped_optimizer(*args, optimizer_type=None, **kwargs):
    assert optimizer_type is not None  # need to set optimizer type!

    class ClipGradOptimizer(optimizer_type):
        def __init__(self, *args, gradient_clip=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.gradient_clip = gradient_clip

        def step(self, *args, **kwargs):
            if self.gradient_clip is not None:
                params = np.concatenate([group['params'] for group in self.param_groups])
                torch.nn.utils.clip_grad_norm_(params, self.gradient_clip)

            super().step(*args, **kwargs)

    return ClipGradOptimizer(*args, **kwargs)


def map_dict(fn, d):
    """takes a dictionary and applies the function to every element"""
    return type(d)(map(lambda kv: (kv[0], fn(kv[1])), d.items()))


def nan_hook(tensor_struct):
    """Jumps into pdb if NaN is detected in tensor_struct (here: raises)."""
    if isinstance(tensor_struct, torch.Tensor) and torch.isnan(tensor_struct).any():
        raise ValueError("NaN")


# ---- spirl/utils/pytorch_utils.py ----
def ten2ar(tensor):
    if isinstance(tensor, np.ndarray):
        return tensor
    elif torch.is_tensor(tensor):
        return tensor.detach().cpu().numpy()
    elif np.isscalar(tensor):
        return tensor
    else:
        raise ValueError('input to ten2ar cannot be converted to numpy array')


def map2torch(struct, device):
    """Recursively maps all elements in struct to torch tensors on the specified device."""
    return map_dict(lambda x: torch.tensor(x, dtype=torch.float32, device=device), struct)


def avg_grad_norm(model):
    """Computes average gradient norm for the given model."""
    norms = [torch.norm(p.grad.data, p=2) for p in model.parameters() if p.grad is not None]
    return sum(norms) / len(norms)


def check_shape(t, target_shape):
    if not list(t.shape) == target_shape:
        raise ValueError(f"Temsor should have shape {target_shape} but has shape {list(t.shape)}!")


class TensorModule(nn.Module):
    """A dummy module that wraps a single tensor and allows it to be handled like a network (for optimizer etc)."""
    def __init__(self, t):
        super().__init__()
        self.t = nn.Parameter(t)

    def forward(self, *args, **kwargs):
        return self.t


def Predictor(hp, input_size, output_size, mid_size, num_layers, final_activation=None, spatial=False):
    """spirl.modules.subnetworks.Predictor, as an MLP."""
    layers = [nn.Linear(input_size, mid_size), nn.LeakyReLU(0.2)]
    for _ in range(num_layers - 2):
        layers += [nn.Linear(mid_size, mid_size), nn.LeakyReLU(0.2)]
    layers += [nn.Linear(mid_size, output_size)]
    return nn.Sequential(*layers)


class MultivariateGaussian(torch.distributions.Independent):
    """spirl.modules.variational_inference.MultivariateGaussian: mean and log_sigma from one tensor."""
    def __init__(self, tensor):
        mu, log_sigma = torch.chunk(tensor, 2, -1)
        super().__init__(torch.distributions.Normal(mu, log_sigma.exp()), 1)


# ---- spirl/rl/components/normalization.py ----
class DummyNormalizer:
    def __init__(self, hp):
        pass

    def __call__(self, vals):
        return vals

    def update(self, vals):
        pass


# ---- spirl/rl/components/policy.py, spirl/rl/policies/mlp_policies.py ----
class Policy(nn.Module):
    """Base policy class."""
    def __init__(self):
        super().__init__()
        self.net = self._build_network()
        self._is_train = True         # whether policy is in train or val mode
        self._rollout_mode = False    # whether policy is in rollout mode (can change which outputs are produced)

    def _default_hparams(self):
        default_dict = ParamDict({
            'action_dim': 1,                   # dimensionality of the action space
            'max_action_range': 1.,            # for cont. actions this defines a symmetric action range [-x, x]
            'squash_output_dist': True,           # do not tanh adjust log prob if set to False
        })
        return default_dict

    def forward(self, obs):
        output_dist = self._compute_action_dist(obs)
        action = output_dist.rsample()
        log_prob = output_dist.log_prob(action)
        if self._hp.squash_output_dist:
            action, log_prob = self._tanh_squash_output(action, log_prob)
        nan_hook(action); nan_hook(log_prob)
        return AttrDict(action=action, log_prob=log_prob, dist=output_dist)

    def _tanh_squash_output(self, action, log_prob):
        """Passes continuous output through a tanh function to constrain action range, adjusts log_prob."""
        action_new = self._hp.max_action_range * torch.tanh(action)
        log_prob_update = np.log(self._hp.max_action_range) + 2 * (np.log(2.) - action -
              torch.nn.functional.softplus(-2. * action)).sum(dim=-1)  # maybe more stable version from Youngwoon Lee
        return action_new, log_prob - log_prob_update

    @property
    def has_trainable_params(self):
        """Indicates whether policy has trainable params."""
        return sum(p.numel() for p in self.net.parameters() if p.requires_grad) > 0

    def sample_rand(self, unused_obs):
        """Samples random action."""
        with torch.no_grad():
            return AttrDict(
                action=self._hp.max_action_range * (2 * torch.rand((self._hp.action_dim,)) - 1.),
                log_prob=-torch.log(torch.tensor(2 * self._hp.max_action_range)) * self._hp.action_dim,
            )

    @property
    def device(self):
        return torch.device("cpu")


class MLPPolicy(Policy):
    """MLP-based Gaussian policy."""
    def __init__(self, config):
        self._hp = self._default_hparams().overwrite(config)
        super().__init__()

    def _default_hparams(self):
        default_dict = ParamDict({
            'input_dim': 32,                  # dimensionality of the observation input
            'n_layers': 3,                    # number of policy network layers
            'nz_mid': 64,                     # size of the intermediate network layers
            'normalization': 'none',          # normalization used in policy network ['none', 'batch']
        })
        return super()._default_hparams().overwrite(default_dict)

    def _build_network(self):
        return Predictor(self._hp,
                         input_size=self._hp.input_dim,
                         output_size=self.mlp_output_size,
                         mid_size=self._hp.nz_mid,
                         num_layers=self._hp.n_layers,
                         final_activation=None,
                         spatial=False)

    def _compute_action_dist(self, obs):
        return MultivariateGaussian(self.net(obs))

    @property
    def mlp_output_size(self):
        return 2 * self._hp.action_dim      # scale and variance of Gaussian output


# ---- spirl/rl/components/critic.py ----
class Critic(nn.Module):
    """Base critic class."""
    def __init__(self):
        super().__init__()
        self._net = self._build_network()

    def _default_hparams(self):
        default_dict = ParamDict({
            'action_dim': 1,    # dimensionality of the action space
            'normalization': 'none',        # normalization used in policy network ['none', 'batch']
            'action_input': True,       # forward takes actions as second argument if set to True
        })
        return default_dict


class MLPCritic(Critic):
    """MLP-based critic."""
    def __init__(self, config):
        self._hp = self._default_hparams().overwrite(config)
        super().__init__()

    def _default_hparams(self):
        default_dict = ParamDict({
            'input_dim': 32,    # dimensionality of the observation input
            'n_layers': 3,      # number of policy network layers
            'nz_mid': 64,       # size of the intermediate network layers
            'output_dim': 1,    # number of outputs, can be >1 for discrete action spaces
        })
        return super()._default_hparams().overwrite(default_dict)

    def forward(self, obs, actions=None):
        input = torch.cat((obs, actions), dim=-1) if self._hp.action_input else obs
        return AttrDict(q=self._net(input))

    def _build_network(self):
        input_size = self._hp.input_dim + self._hp.action_dim if self._hp.action_input else self._hp.input_dim
        return Predictor(self._hp,
                         input_size=input_size,
                         output_size=self._hp.output_dim,
                         mid_size=self._hp.nz_mid,
                         num_layers=self._hp.n_layers,
                         spatial=False)


# ---- spirl/rl/components/replay_buffer.py ----
class ReplayBuffer:
    """Stores arbitrary rollout outputs that are provided by AttrDicts."""
    def __init__(self, hp):
        self._hp = self._default_hparams().overwrite(hp)
        self._max_capacity = self._hp.capacity
        self._replay_buffer = None
        self._idx = None
        self._size = None       # indicates whether all slots in replay buffer were filled at least once

    def _default_hparams(self):
        default_dict = ParamDict({
            'capacity': 1e6,        # max number of experience samples
            'dump_replay': True,    # whether replay buffer gets dump upon checkpointing
        })
        return default_dict

    def append(self, experience_batch):
        """Appends the vals in the AttrDict experience_batch to the existing replay buffer."""
        if self._replay_buffer is None:
            self._init(experience_batch)

        # compute indexing range
        n_samples = self._get_n_samples(experience_batch)
        idxs = np.asarray(np.arange(self._idx, self._idx + n_samples) % self._max_capacity, dtype=int)

        # add batch
        for key in self._replay_buffer:
            self._replay_buffer[key][idxs] = np.stack(experience_batch[key])

        # advance pointer
        self._idx = int((self._idx + n_samples) % self._max_capacity)
        self._size = int(min(self._size + n_samples, self._max_capacity))

    def _init(self, example_batch):
        """Initializes the replay buffer fields given an example experience batch."""
        self._replay_buffer = AttrDict()
        for key in example_batch:
            example_element = example_batch[key][0]
            self._replay_buffer[key] = np.empty([int(self._max_capacity)] + list(example_element.shape),
                                                   dtype=example_element.dtype)
        self._idx = 0
        self._size = 0

    @staticmethod
    def _get_n_samples(batch):
        """Retrieves the number of samples in batch."""
        for key in batch:
            return len(batch[key])

    @property
    def size(self):
        return self._size


class UniformReplayBuffer(ReplayBuffer):
    """Samples batch uniformly from all experience samples in the buffer."""
    def sample(self, n_samples, filter=None):
        assert n_samples <= self.size      # need enough samples in replay buffer
        assert isinstance(self.size, int)   # need integer-valued size
        idxs = np.random.choice(np.arange(self.size), size=n_samples)

        sampled_transitions = AttrDict()
        for key in self._replay_buffer:
            if filter is None or key in filter:
                sampled_transitions[key] = self._replay_buffer[key][idxs]
        return sampled_transitions


# ---- spirl/rl/components/agent.py ----
class BaseAgent(nn.Module):
    def __init__(self, config):
        super().__init__()
        self._hp = self._default_hparams().overwrite(config)
        self.device = self._hp.device
        self._is_train = True           # indicates whether agent should sample in training mode
        self._rand_act_mode = False     # indicates whether agent should act randomly (for warmup collection)
        self._rollout_mode = False      # indicates whether agent is run in rollout mode (omit certain policy outputs)
        self._obs_normalizer = self._hp.obs_normalizer(self._hp.obs_normalizer_params)

    def _default_hparams(self):
        default_dict = ParamDict({
            'device': None,                         # pytorch device
            'discount_factor': 0.99,                # discount factor for RL update
            'optimizer': 'adam',                    # supported: 'adam', 'radam', 'rmsprop', 'sgd'
            'gradient_clip': None,                  # max grad norm, if None no clipping
            'momentum': 0,                          # momentum in RMSProp / SGD optimizer
            'adam_beta': 0.9,                       # beta1 param in Adam
            'update_iterations': 1,                 # number of iteration steps per one call to 'update(...)'
            'target_network_update_factor': 5e-3,   # percentage of new weights that are carried over
            'batch_size': 64,                       # size of the experience batch used for updates
            'obs_normalizer': DummyNormalizer,      # observation normalization class
            'obs_normalizer_params': {},            # parameters for optimization norm class
        })
        return default_dict

    def _soft_update_target_network(self, target, source):
        """Copies weights from source to target with weight [0,1]."""
        for target_param, param in zip(target.parameters(), source.parameters()):
            target_param.data.copy_(self._hp.target_network_update_factor * param.data +
                                    (1 - self._hp.target_network_update_factor) * target_param.data)

    def _copy_to_target_network(self, target, source):
        """Completely copies weights from source to target."""
        for target_param, source_param in zip(target.parameters(), source.parameters()):
            target_param.data.copy_(source_param.data)

    def _get_optimizer(self, optimizer, model, lr):
        """Returns an instance of the specified optimizers on the parameters of the model with specified learning rate."""
        if optimizer == 'adam':
            get_optim = partial(get_clipped_optimizer, optimizer_type=Adam, betas=(self._hp.adam_beta, 0.999))
        elif optimizer == 'sgd':
            get_optim = partial(get_clipped_optimizer, optimizer_type=SGD, momentum=self._hp.momentum)
        else:
            raise ValueError("Optimizer '{}' not supported!".format(optimizer))
        optim = partial(get_optim, gradient_clip=self._hp.gradient_clip)
        return optim(filter(lambda p: p.requires_grad, model.parameters()), lr=lr)

    def _perform_update(self, loss, opt, network):
        """Performs one backward gradient step on the loss using the given optimizer. Also syncs gradients."""
        nan_hook(loss)
        opt.zero_grad()
        loss.backward()

        grads = [p.grad for p in network.parameters()]
        nan_hook(grads)

        opt.step()


# ---- spirl/rl/agents/ac_agent.py ----
class ACAgent(BaseAgent):
    """Implements actor-critic agent. (does not implement update function, this should be handled by RL algo agent)"""
    def __init__(self, config):
        BaseAgent.__init__(self, config)
        self._hp = self._default_hparams().overwrite(config)
        self.policy = self._hp.policy(self._hp.policy_params)
        if self.policy.has_trainable_params:
            self.policy_opt = self._get_optimizer(self._hp.optimizer, self.policy, self._hp.policy_lr)

    def _default_hparams(self):
        default_dict = ParamDict({
            'policy': None,     # policy class
            'policy_params': None,  # parameters for the policy class
            'policy_lr': 3e-4,  # learning rate for policy update
        })
        return super()._default_hparams().overwrite(default_dict)

    def _preprocess_experience(self, experience_batch):
        """Optionally pre-process experience before it is used for policy training."""
        return experience_batch


class SACAgent(ACAgent):
    """Implements SAC algorithm."""
    def __init__(self, config):
        ACAgent.__init__(self, config)
        self._hp = self._default_hparams().overwrite(config)

        # build critics and target networks, copy weights of critics to target networks
        self.critics = torch.nn.ModuleList([self._hp.critic(self._hp.critic_params) for _ in range(2)])
        self.critic_targets = torch.nn.ModuleList([self._hp.critic(self._hp.critic_params) for _ in range(2)])
        [self._copy_to_target_network(target, source) for target, source in zip(self.critics, self.critic_targets)]

        # build optimizers for critics
        self.critic_opts = [self._get_optimizer(self._hp.optimizer, critic, self._hp.critic_lr) for critic in self.critics]

        # define entropy multiplier alpha
        self._log_alpha = TensorModule(torch.zeros(1, requires_grad=True, device=self._hp.device))
        self.alpha_opt = self._get_optimizer(self._hp.optimizer, self._log_alpha, self._hp.alpha_lr)
        self._target_entropy = self._hp.target_entropy if self._hp.target_entropy is not None \
                                        else -1 * self._hp.policy_params.action_dim

        # build replay buffer
        self.replay_buffer = self._hp.replay(self._hp.replay_params)

        self._update_steps = 0                # counts the number of alpha updates for optional variable schedules

    def _default_hparams(self):
        default_dict = ParamDict({
            'critic': None,           # critic class
            'critic_params': None,    # parameters for the critic class
            'replay': None,           # replay buffer class
            'replay_params': None,    # parameters for replay buffer
            'critic_lr': 3e-4,        # learning rate for critic update
            'alpha_lr': 3e-4,         # learning rate for alpha coefficient update
            'fixed_alpha': None,      # optionally fixed value for alpha
            'reward_scale': 1.0,      # SAC reward scale
            'clip_q_target': False,   # if True, clips Q target
            'target_entropy': None,   # target value for automatic entropy tuning, if None uses -action_dim
        })
        return super()._default_hparams().overwrite(default_dict)

    def update(self, experience_batch):
        """Updates actor and critics."""
        # push experience batch into replay buffer
        self.add_experience(experience_batch)

        for _ in range(self._hp.update_iterations):
            # sample batch and normalize
            experience_batch = self._sample_experience()
            experience_batch = self._normalize_batch(experience_batch)
            experience_batch = map2torch(experience_batch, self._hp.device)
            experience_batch = self._preprocess_experience(experience_batch)

            policy_output = self._run_policy(experience_batch.observation)

            # update alpha
            alpha_loss = self._update_alpha(experience_batch, policy_output)

            # compute policy loss
            policy_loss = self._compute_policy_loss(experience_batch, policy_output)

            # compute target Q value
            with torch.no_grad():
                policy_output_next = self._run_policy(experience_batch.observation_next)
                value_next = self._compute_next_value(experience_batch, policy_output_next)
                q_target = experience_batch.reward * self._hp.reward_scale + \
                                (1 - experience_batch.done) * self._hp.discount_factor * value_next
                if self._hp.clip_q_target:
                    q_target = self._clip_q_target(q_target)
                q_target = q_target.detach()
                check_shape(q_target, [self._hp.batch_size])

            # compute critic loss
            critic_losses, qs = self._compute_critic_loss(experience_batch, q_target)

            # update policy network on policy loss
            self._perform_update(policy_loss, self.policy_opt, self.policy)

            # update critic networks
            [self._perform_update(critic_loss, critic_opt, critic)
                    for critic_loss, critic_opt, critic in zip(critic_losses, self.critic_opts, self.critics)]

            # update target networks
            [self._soft_update_target_network(critic_target, critic)
                    for critic_target, critic in zip(self.critic_targets, self.critics)]

            # logging
            info = AttrDict(    # losses
                policy_loss=policy_loss,
                alpha_loss=alpha_loss,
                critic_loss_1=critic_losses[0],
                critic_loss_2=critic_losses[1],
            )
            if self._update_steps % 100 == 0:
                info.update(AttrDict(       # gradient norms
                    policy_grad_norm=avg_grad_norm(self.policy),
                    critic_1_grad_norm=avg_grad_norm(self.critics[0]),
                    critic_2_grad_norm=avg_grad_norm(self.critics[1]),
                ))
            info.update(AttrDict(       # misc
                alpha=self.alpha,
                pi_log_prob=policy_output.log_prob.mean(),
                policy_entropy=policy_output.dist.entropy().mean(),
                q_target=q_target.mean(),
                q_1=qs[0].mean(),
                q_2=qs[1].mean(),
            ))
            info = map_dict(ten2ar, info)

            self._update_steps += 1

        return info

    def add_experience(self, experience_batch):
        """Adds experience to replay buffer."""
        if not experience_batch:
            return  # pass if experience_batch is empty
        self.replay_buffer.append(experience_batch)
        self._obs_normalizer.update(experience_batch.observation)

    def _sample_experience(self):
        return self.replay_buffer.sample(n_samples=self._hp.batch_size)

    def _normalize_batch(self, experience_batch):
        """Optionally apply observation normalization."""
        experience_batch.observation = self._obs_normalizer(experience_batch.observation)
        experience_batch.observation_next = self._obs_normalizer(experience_batch.observation_next)
        return experience_batch

    def _run_policy(self, obs):
        """Allows child classes to post-process policy outputs."""
        return self.policy(obs)

    def _update_alpha(self, experience_batch, policy_output):
        if self._hp.fixed_alpha is not None:
            return 0.
        alpha_loss = self._compute_alpha_loss(policy_output)
        self._perform_update(alpha_loss, self.alpha_opt, self._log_alpha)
        return alpha_loss

    def _compute_alpha_loss(self, policy_output):
        return -1 * (self.alpha * (self._target_entropy + policy_output.log_prob).detach()).mean()

    def _compute_policy_loss(self, experience_batch, policy_output):
        q_est = torch.min(*[critic(experience_batch.observation, self._prep_action(policy_output.action)).q
                                      for critic in self.critics])
        policy_loss = -1 * q_est + self.alpha * policy_output.log_prob[:, None]
        check_shape(policy_loss, [self._hp.batch_size, 1])
        return policy_loss.mean()

    def _compute_next_value(self, experience_batch, policy_output):
        q_next = torch.min(*[critic_target(experience_batch.observation_next, self._prep_action(policy_output.action)).q
                             for critic_target in self.critic_targets])
        next_val = (q_next - self.alpha * policy_output.log_prob[:, None])
        check_shape(next_val, [self._hp.batch_size, 1])
        return next_val.squeeze(-1)

    def _compute_critic_loss(self, experience_batch, q_target):
        qs = self._compute_q_estimates(experience_batch)
        check_shape(qs[0], [self._hp.batch_size])
        critic_losses = [0.5 * (q - q_target).pow(2).mean() for q in qs]
        return critic_losses, qs

    def _compute_q_estimates(self, experience_batch):
        return [critic(experience_batch.observation, self._prep_action(experience_batch.action.detach())).q.squeeze(-1)
                    for critic in self.critics]     # no gradient propagation into policy here!

    def _prep_action(self, action):
        """Preprocessing of action in case of discrete action space."""
        if len(action.shape) == 1: action = action[:, None]  # unsqueeze for single-dim action spaces
        return action.float()

    @property
    def alpha(self):
        return self._log_alpha().exp()


# ---- an experiment config (spirl/configs/rl/...), sizes shrunk ----
if __name__ == "__main__":
    obs_dim, action_dim, batch_size = 6, 2, 8
    agent_config = AttrDict(
        device='cpu',
        batch_size=batch_size,
        policy=MLPPolicy,
        policy_params=AttrDict(action_dim=action_dim, input_dim=obs_dim, n_layers=2, nz_mid=16),
        critic=MLPCritic,
        critic_params=AttrDict(action_dim=action_dim, input_dim=obs_dim, n_layers=2, nz_mid=16),
        replay=UniformReplayBuffer,
        replay_params=AttrDict(capacity=100, dump_replay=False),
    )
    agent = SACAgent(agent_config)

    for step in range(3):
        # a rollout of random transitions instead of an environment
        experience_batch = AttrDict(
            observation=list(np.random.randn(batch_size, obs_dim).astype(np.float32)),
            action=list(np.random.uniform(-1, 1, (batch_size, action_dim)).astype(np.float32)),
            reward=list(np.random.randn(batch_size).astype(np.float32)),
            done=list(np.zeros(batch_size, dtype=np.float32)),
            observation_next=list(np.random.randn(batch_size, obs_dim).astype(np.float32)),
        )
        info = agent.update(experience_batch)
        print(step, info.policy_loss, info.critic_loss_1)
