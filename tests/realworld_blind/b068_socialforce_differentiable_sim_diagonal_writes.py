"""socialforce (svenkreiss) Simulator + PedPedPotentialMLP + Trainer: a differentiable social-force simulation that zeroes diagonals through `torch.diagonal(...)[:] = 0.0`, patches masked entries of norm outputs, accumulates the force with `F += ...` and builds each new state by slice-assigning into a detached clone, while an MLP potential is fitted through many oversampled steps."""
# outcome: ok
# source: https://github.com/svenkreiss/socialforce/blob/8d1fba69667f949175dc8575857fb4780afedb9a/socialforce/simulator.py
# repo: svenkreiss/socialforce
# category: iteration
import copy
import logging
import math
import random
import types

import numpy as np
import torch

LOG = logging.getLogger(__name__)


# ---- socialforce/stateutils.py ----
def desired_directions(state):
    """Given the current state and destination, compute desired direction."""
    destination_vectors = state[:, 6:8] - state[:, 0:2]

    # support for prediction without given destination:
    # "desired_direction" is in the direction of the current velocity
    invalid_destination = torch.isnan(destination_vectors[:, 0])
    destination_vectors[invalid_destination] = state[invalid_destination, 2:4]

    norm_factors = torch.linalg.norm(destination_vectors, ord=2, dim=-1)
    norm_factors[norm_factors == 0.0] = 1.0
    return destination_vectors / norm_factors.unsqueeze(-1)


def speeds(state):
    """Return the speeds corresponding to a given state."""
    return torch.linalg.norm(state[:, 2:4], ord=2, dim=-1)


stateutils = types.SimpleNamespace(desired_directions=desired_directions, speeds=speeds)


# ---- socialforce/potentials/pedped_1d.py ----
class PedPedPotential(torch.nn.Module):
    """Ped-ped interaction potential based on distance b.

    v0 is in m^2 / s^2.
    sigma is in m.
    """
    delta_t_step = 0.4

    def __init__(self, v0=2.1, sigma=0.3):
        super().__init__()
        self.v0 = v0
        self.sigma = sigma

    def b(self, r_ab, speeds, desired_directions):
        """Calculate b."""
        speeds_b = speeds.unsqueeze(0)
        speeds_b_abc = speeds_b.unsqueeze(2)  # abc = alpha, beta, coordinates
        e_b = desired_directions.unsqueeze(0)

        in_sqrt = (
            self.norm_r_ab(r_ab)
            + self.norm_r_ab(r_ab - self.delta_t_step * speeds_b_abc * e_b)
        )**2 - (self.delta_t_step * speeds_b)**2

        # torch.diagonal(in_sqrt)[:] = 0.0  # protect forward pass
        in_sqrt = torch.clamp(in_sqrt, min=1e-8)
        out = 0.5 * torch.sqrt(in_sqrt)
        # torch.diagonal(out)[:] = 0.0  # protect backward pass

        return out

    def value_b(self, b):
        """Value of potential parametrized with b."""
        return self.v0 * torch.exp(-b / self.sigma)

    def value_r_ab(self, r_ab, speeds, desired_directions):
        """Value of potential explicitely parametrized with r_ab."""
        b = self.b(r_ab, speeds, desired_directions)
        return self.value_b(b)

    @staticmethod
    def r_ab(state):
        """Construct r_ab using broadcasting."""
        r = state[:, 0:2]
        r_a0 = r.unsqueeze(1)
        r_0b = r.unsqueeze(0).detach()  # detach others
        r_ab = r_a0 - r_0b
        torch.diagonal(r_ab)[:] = 0.0  # detach diagonal gradients
        return r_ab

    def forward(self, state):
        speeds = stateutils.speeds(state).detach()
        desired_directions = stateutils.desired_directions(state).detach()
        return self.value_r_ab(self.r_ab(state), speeds, desired_directions)

    def grad_r_ab_finite_difference(self, state, delta=1e-3):
        """Compute gradient wrt r_ab using finite difference differentiation."""
        r_ab = self.r_ab(state[:, 0:2])
        speeds = stateutils.speeds(state)
        desired_directions = stateutils.desired_directions(state)

        dx = torch.tensor([[[delta, 0.0]]])
        dy = torch.tensor([[[0.0, delta]]])

        v = self.value_r_ab(r_ab, speeds, desired_directions)
        dvdx = (self.value_r_ab(r_ab + dx, speeds, desired_directions) - v) / delta
        dvdy = (self.value_r_ab(r_ab + dy, speeds, desired_directions) - v) / delta

        # remove gradients from self-intereactions
        torch.diagonal(dvdx)[:] = 0.0
        torch.diagonal(dvdy)[:] = 0.0

        return torch.stack((dvdx, dvdy), dim=-1)

    def grad_r_ab(self, state):
        """Compute gradient wrt r_ab using autograd."""
        speeds = stateutils.speeds(state).detach()
        desired_directions = stateutils.desired_directions(state).detach()
        r_ab = self.r_ab(state)
        return self.grad_r_ab_(r_ab, speeds, desired_directions)

    def grad_r_ab_(self, r_ab, speeds, desired_directions):
        """Compute gradient wrt r_ab using autograd."""
        def compute(r_ab):
            return self.value_r_ab(r_ab, speeds, desired_directions)

        with torch.enable_grad():
            vector = torch.ones(r_ab.shape[0:2], requires_grad=False)
            _, r_ab_grad = torch.autograd.functional.vjp(
                compute, r_ab, vector,
                create_graph=True, strict=True)

        return r_ab_grad

    @staticmethod
    def norm_r_ab(r_ab):
        """Norm of r_ab.

        Special treatment of diagonal terms for backpropagation.

        Without this treatment, backpropagating through a norm of a
        zero vector gives nan gradients.
        """
        out = torch.linalg.norm(r_ab, ord=2, dim=2, keepdim=False)

        # only take the upper and lower triangles and leaving the
        # diagonal at zero and do it in a differentiable way
        # without inplace ops
        out = torch.triu(out, diagonal=1) + torch.tril(out, diagonal=-1)

        return out


class PedPedPotentialWall(PedPedPotential):
    """Ped-ped interaction potential based on distance b.

    v0 is in m^2 / s^2.
    sigma is in m.
    """
    delta_t_step = 0.4

    def __init__(self, sigma=0.3, w=0.1):
        super().__init__()
        self.sigma = sigma
        self.w = w

    def value_b(self, b):
        """Value of potential parametrized with b."""
        return torch.exp(-(b - self.sigma) / self.w)


class PedPedPotentialMLP(PedPedPotential):
    """Ped-ped interaction potential."""

    def __init__(self, *, hidden_units=5, small_init=False, dropout_p=0.0):
        super().__init__()

        lin1 = torch.nn.Linear(1, hidden_units)
        lin2 = torch.nn.Linear(hidden_units, 1)

        # initialize
        if small_init:
            torch.nn.init.normal_(lin1.weight, std=0.03)
            torch.nn.init.normal_(lin1.bias, std=0.03)
            torch.nn.init.normal_(lin2.weight, std=0.03)
            torch.nn.init.normal_(lin2.bias, std=0.03)

        if dropout_p == 0.0:
            self.mlp = torch.nn.Sequential(
                lin1, torch.nn.Softplus(),
                lin2, torch.nn.Softplus(),
            )
        else:
            self.mlp = torch.nn.Sequential(
                lin1, torch.nn.Softplus(), torch.nn.Dropout(dropout_p),
                lin2, torch.nn.Softplus(),
            )

    def value_b(self, b):
        """Calculate value given b."""
        b = torch.clamp(b, max=100.0)
        return self.mlp(b.view(-1, 1)).view(b.shape)


# ---- socialforce/field_of_view.py ----
class FieldOfView:
    """Compute field of view prefactors.

    The field of view angle twophi is given in degrees.
    out_of_view_factor is C in the paper.
    """
    out_of_view_factor = 0.5

    def __init__(self, twophi=200.0):
        self.cosphi = math.cos(twophi / 2.0 / 180.0 * math.pi)

    def __call__(self, e, f):
        """Weighting factor for field of view.

        e is rank 2 and normalized in the last index.
        f is a rank 3 tensor.
        """
        cosphi_l = torch.einsum('aj,abj->ab', (e, f))
        in_sight = cosphi_l > torch.linalg.norm(f, ord=2, dim=-1) * self.cosphi

        out = torch.full_like(cosphi_l, self.out_of_view_factor)
        out[in_sight] = 1.0
        torch.diagonal(out)[:] = 0.0
        return out


# ---- socialforce/simulator.py ----
class Simulator(torch.nn.Module):
    """Simulate social force model.

    Main interface is the state. Every pedestrian is an entry in the state and
    represented by a vector (x, y, v_x, v_y, [a_x, a_y], [d_x, d_y], [tau]),
    which are the coordinates for position, velocity and destination.
    destination and tau are optional in this vector.

    ped_space is an instance of PedSpacePotential.
    ped_ped is an instance of PedPedPotential.

    delta_t in seconds.
    tau in seconds: either float or numpy array of shape[n_ped].
    field_of_view: use -1 to remove
    """
    max_speed_multiplier = 1.3

    def __init__(self, *,
                 ped_space=None, ped_ped=None, field_of_view=None,
                 delta_t=0.4, tau=0.5,
                 oversampling=10, dtype=None, integrator=None):
        super().__init__()

        self.tau = tau
        self.dtype = dtype if dtype is not None else torch.float32

        self.delta_t = delta_t / oversampling
        self.oversampling = oversampling

        if integrator is None:
            integrator = LeapfrogIntegrator(self.delta_t)
        self.integrator = integrator

        # potentials
        self.V = ped_ped or PedPedPotential()
        self.U = ped_space

        # field of view
        self.w = field_of_view or FieldOfView()

    def normalize_state(self, state):
        if not isinstance(state, torch.Tensor):
            state = torch.tensor(state, dtype=self.dtype)
        assert len(state.shape) == 2

        if state.shape[1] == 4:
            # accelerations and destinations not given
            no_destinations = torch.full((state.shape[0], 2), float('nan'),
                                         dtype=state.dtype)
            state = torch.cat((state, no_destinations), dim=-1)
        if state.shape[1] == 5:
            # accelerations and destinations not given but tau is given
            no_dest_acc = torch.full((state.shape[0], 4), float('nan'),
                                     dtype=state.dtype)
            state = torch.cat((state[:, 0:4], no_dest_acc, state[:, 4:]), dim=-1)
        if state.shape[1] in (6, 7):
            # accelerations not given
            no_accelerations = torch.zeros((state.shape[0], 2), dtype=state.dtype)
            state = torch.cat((state[:, :4], no_accelerations, state[:, 4:]), dim=-1)
        if state.shape[1] == 8:
            # tau not given
            if hasattr(self.tau, 'shape'):
                tau = self.tau
            else:
                tau = self.tau * torch.ones(state.shape[0], dtype=state.dtype)
            state = torch.cat((state, tau.unsqueeze(-1)), dim=-1)
        if state.shape[1] == 9:
            # preferred speed not given
            preferred_speeds = stateutils.speeds(state)
            state = torch.cat((state, preferred_speeds.unsqueeze(-1)), dim=-1)

        assert state.shape[1] == 10, state.shape[1]
        return state

    def f_ab(self, state):
        """Compute f_ab."""
        return -1.0 * self.V.grad_r_ab(state)

    def f_aB(self, state):
        """Compute f_aB."""
        if self.U is None:
            return None
        return -1.0 * self.U.grad_r_aB(state)

    def cap_velocity(self, state):
        """Scale down a desired velocity to its capped speed."""
        desired_velocity = state[:, 2:4]
        desired_speeds = torch.linalg.norm(desired_velocity, ord=2, dim=-1, keepdims=True)
        max_speeds = state[:, 9:10] * self.max_speed_multiplier
        factor = torch.clamp(max_speeds / desired_speeds, max=1.0)

        state = torch.clone(state)
        state[:, 2:4] = desired_velocity * factor
        return state

    def forward(self, *args):
        """Do oversampling steps."""
        state = args[0]
        state = self.normalize_state(state.clone().detach())

        for _ in range(self.oversampling):
            state = self._step(state)

        return state

    def _step(self, state):
        """Do one step in the simulation and update the state in place."""

        # accelerate to preferred velocity
        e = stateutils.desired_directions(state).detach()
        vel = state[:, 2:4].detach()
        tau = state[:, 8:9].detach()
        preferred_speeds = state[:, 9:10].detach()
        F0 = 1.0 / tau * (preferred_speeds * e - vel)

        # repulsive terms between pedestrians
        f_ab = self.f_ab(state.detach())

        # field of view modulation
        if f_ab is not None and self.w is not None and self.w != -1:
            # w = self.w(e, -f_ab).unsqueeze(-1).detach()
            r_ab = PedPedPotential.r_ab(state)
            w = self.w(e, -r_ab).unsqueeze(-1).detach()
            F_ab = w * f_ab
        else:
            F_ab = f_ab

        # repulsive terms between pedestrians and boundaries
        F_aB = self.f_aB(state.detach())

        # social force
        F = F0
        if F_ab is not None:
            F += torch.sum(F_ab, dim=1)
        if F_aB is not None:
            F += torch.sum(F_aB, dim=1)

        state = self.integrator(state, F)
        state = self.cap_velocity(state)
        return state

    def run(self, state, n_steps):
        state = self.normalize_state(state.clone().detach())
        states = [state]
        for _ in range(n_steps):
            last_state = states[-1]
            states.append(self(last_state).clone())

        return torch.stack(states)


class EulerIntegrator:
    def __init__(self, delta_t):
        self.delta_t = delta_t

    def __call__(self, state, acceleration):
        # before applying updates to state, make a copy of it
        previous_state = state
        new_state = state.clone().detach()  # gradients will be connected below

        # update state
        new_state[:, 0:2] = previous_state[:, 0:2] + self.delta_t * previous_state[:, 2:4]
        new_state[:, 2:4] = previous_state[:, 2:4] + self.delta_t * previous_state[:, 4:6]
        new_state[:, 4:6] = acceleration

        return new_state


class LeapfrogIntegrator:
    def __init__(self, delta_t):
        self.delta_t = delta_t

    def __call__(self, state, acceleration):
        # before applying updates to state, make a copy of it
        previous_state = state
        new_state = state.clone().detach()  # gradients will be connected below

        # update position
        new_state[:, 0:2] = (previous_state[:, 0:2]
                             + previous_state[:, 2:4] * self.delta_t
                             + 0.5 * acceleration * self.delta_t**2)

        # update velocity
        v = previous_state[:, 2:4] + 0.5 * (previous_state[:, 4:6] + acceleration) * self.delta_t
        new_state[:, 2:4] = v

        # update acceleration
        new_state[:, 4:6] = acceleration

        return new_state


class PeriodicBoundary:
    def __init__(self, integrator, *, x_boundary=None, y_boundary=None):
        self.integrator = integrator
        self.x_boundary = x_boundary
        self.y_boundary = y_boundary

    def __call__(self, state, acceleration):
        old_state = self.integrator(state, acceleration)

        new_state = old_state.clone()
        if self.x_boundary is not None:
            width = self.x_boundary[1] - self.x_boundary[0]
            new_state[old_state[:, 0] < self.x_boundary[0], 0] += width
            new_state[old_state[:, 0] > self.x_boundary[1], 0] -= width
        if self.y_boundary is not None:
            height = self.y_boundary[1] - self.y_boundary[0]
            new_state[old_state[:, 1] < self.y_boundary[0], 1] += height
            new_state[old_state[:, 1] > self.y_boundary[1], 1] -= height

        return new_state


# ---- socialforce/trainer.py ----
class Trainer:
    """Trainer

    train_experience: list of state tuples (each state is a torch.Tensor)
    """

    def __init__(self, simulator, optimizer, *,
                 batch_size=1, loss=None):
        self.simulator = simulator
        self.optimizer = optimizer

        self.batch_size = batch_size
        self.loss = loss
        if loss is None:
            self.loss = torch.nn.L1Loss()

    @staticmethod
    def scenes_to_experience(scenes, radius=3.0, acc_abs=0.1):
        experience = [
            (state1, state2)
            for scene in scenes
            for state1, state2 in zip(scene[:-1], scene[1:])
        ]
        n_total = len(experience)

        def keep(state1, state2):
            valid_state1 = torch.isfinite(state1[:, 0])
            valid_state2 = torch.isfinite(state2[:, 0])

            small_distance = (
                (PedPedPotential.norm_r_ab(PedPedPotential.r_ab(state1)) < radius)
                | (PedPedPotential.norm_r_ab(PedPedPotential.r_ab(state2)) < radius)
            )
            torch.diagonal(small_distance)[:] = False
            small_distance = torch.any(small_distance, dim=-1)

            acc = (torch.abs(state1[:, 4:6]) > acc_abs) | (torch.abs(state2[:, 4:6]) > acc_abs)
            acc = torch.any(acc, dim=-1)
            # keep 10% of samples without acc:
            acc[~acc] = torch.rand(acc[~acc].shape) < 0.1
            acc[:] = torch.any(acc)  # symmetrize

            return valid_state1 & valid_state2 & small_distance & acc

        keep_pedestrians = [keep(state1, state2) for state1, state2 in experience]
        experience = [
            (state1[k], state2[k])
            for k, (state1, state2) in zip(keep_pedestrians, experience)
            if torch.any(k)
        ]

        LOG.info('from %d scenes, extracted %d experiences, filtered to %d',
                 len(scenes), n_total, len(experience))
        return experience

    def epoch(self, train_experience, val_experience=None):
        assert val_experience is None, 'TODO'  # TODO
        random.shuffle(train_experience)

        n_batches = 0
        epoch_loss = 0.0

        for i in range(0, len(train_experience), self.batch_size):
            data = train_experience[i:i + self.batch_size]

            loss = 0.0
            for e in data:
                Y = e[1]
                X = self.simulator(e[0])
                loss = loss + self.loss(X[:, :2], Y[:, :2])

            epoch_loss += float(loss.item())
            n_batches += 1

            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        epoch_loss /= n_batches
        return epoch_loss

    def loop(self, n_epochs, train_experience, val_experience=None, *, log_interval=1):
        for i in range(n_epochs):
            loss = self.epoch(train_experience, val_experience)
            if (i + 1) % log_interval == 0:
                print(f'epoch {i + 1}: {loss}')


# ---- socialforce/scenarios.py ----
class Circle:
    def __init__(self, ped_ped=None, **kwargs):
        self.ped_ped = ped_ped or PedPedPotential(2.1)
        self.simulator = Simulator(ped_ped=self.ped_ped, **kwargs)

    def generate(self, n, *, steps_per_scenario=21):
        # ped0 always left to right
        speed0 = 0.7 + 0.4 * torch.rand(1).item()
        ped0 = np.array([-5.0, 0.0, speed0, 0.0, 6.0, 0.0])

        generator_initial_states = []
        # Minimum 15degree angle (to avoid pedestrians starting on top of each other).
        # 15 degrees is about 0.25.
        for theta in 0.25 + torch.rand(n) * (2.0 * math.pi - 0.5):
            # ped1 at a random angle with +/-20% speed variation
            c, s = np.cos(theta), np.sin(theta)
            r = np.array([[c, -s], [s, c]])
            ped1 = np.concatenate((
                np.matmul(r, ped0[0:2]),
                np.matmul(r, ped0[2:4] * (0.7 + 0.4 * torch.rand(1).item())),
                np.matmul(r, ped0[4:6]),
            ))
            generator_initial_states.append(
                self.simulator.normalize_state(np.stack((ped0, ped1)))
            )

        with torch.no_grad():
            return [
                self.simulator.run(initial_state, steps_per_scenario)
                for initial_state in generator_initial_states
            ]


# ---- guide/pedped_1d.ipynb (shrunk: 1 scene, 16 steps, oversampling 2, 1 epoch) ----
if __name__ == '__main__':
    _ = torch.manual_seed(43)
    circle = Circle(oversampling=2)
    scenarios = circle.generate(1, steps_per_scenario=16)
    true_experience = Trainer.scenes_to_experience(scenarios)

    V = PedPedPotentialMLP()
    initial_state_dict = copy.deepcopy(V.state_dict())

    simulator = Simulator(ped_ped=V, oversampling=2)
    opt = torch.optim.SGD(V.parameters(), lr=1.0)
    Trainer(simulator, opt).loop(1, true_experience, log_interval=1)
    final_state_dict = copy.deepcopy(V.state_dict())
