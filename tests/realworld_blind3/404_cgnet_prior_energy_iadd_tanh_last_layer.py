"""cgnet's CGnet.forward adds each prior energy to the network energy in place, `energy += prior(feat[:, prior.feat_idx])`; with the issue's last layer `LinearLayer(width_layer, 1, activation=nn.Tanh())` the network energy is a Tanh output, which TanhBackward saved, and the force autograd.grad of the forward pass fails."""
# outcome: inplace-error
# source: https://github.com/coarse-graining/cgnet/issues/63
# repo: coarse-graining/cgnet
# category: residual
# twin: 405_cgnet_prior_energy_iadd_tanh_last_layer_fixed.py
# cgnet as it was when the issue was filed (commit 2d33ce5, July 2019): cgnet/feature/geometry.py,
# feature.py, utils.py (LinearLayer), cgnet/network/priors.py (HarmonicLayer), nnet.py (CGnet,
# ForceLoss) and utils.py (lipschitz_projection); the training loop of
# examples/Training-A-Coarse-Grained-Force-Field.ipynb with the Tanh last layer. Random
# coordinates and forces stand in for ala2_coordinates.npy / ala2_forces.npy, and the bond and
# angle constants are computed here in place of GeometryStatistics.
import warnings

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, RandomSampler


# ---- cgnet/feature/geometry.py ----
class Geometry():
    """Helper class to calculate distances, angles, and dihedrals
    with a unified, vectorized framework depending on whether pytorch
    or numpy is used.
    """

    def __init__(self, method='torch'):
        self.method = method
        if method == 'torch':
            self.setup_torch()
        else:
            raise RuntimeError("Allowed methods are 'torch' and 'numpy'")

    def setup_torch(self):
        self.arccos = torch.acos

        self.cross = lambda x, y, axis: torch.cross(x, y, dim=axis)
        self.norm = lambda x, axis: torch.norm(x, dim=axis)
        self.sum = lambda x, axis: torch.sum(x, dim=axis)

    def get_distance_indices(self, n_beads, backbone_inds=[], backbone_map=None):
        """Determines indices of pairwise distance features.
        """
        pair_order = []
        adj_backbone_pairs = []
        for increment in range(1, n_beads):
            for i in range(n_beads - increment):
                pair_order.append((i, i+increment))
                if len(backbone_inds) > 0:
                    if (backbone_map[i+increment]
                            - backbone_map[i] == 1):
                        adj_backbone_pairs.append((i, i+increment))

        return pair_order, adj_backbone_pairs

    def get_vectorize_inputs(self, inds, data):
        """Helper function to obtain indices for vectorized calculations.
        """
        if len(np.unique([len(feat) for feat in inds])) > 1:
            raise ValueError(
                "All features must be the same length."
            )
        feat_length = len(inds[0])

        ind_list = [[feat[i] for feat in inds]
                    for i in range(feat_length)]

        dist_list = [data[:, ind_list[i+1], :]
                     - data[:, ind_list[i], :]
                     for i in range(feat_length - 1)]

        if len(dist_list) == 1:
            dist_list = dist_list[0]

        return dist_list

    def get_distances(self, distance_inds, data, norm=True):
        """Calculates distances in a vectorized fashion.
        """
        distances = self.get_vectorize_inputs(distance_inds, data)
        if norm:
            distances = self.norm(distances, axis=2)
        return distances

    def get_angles(self, angle_inds, data):
        """Calculates angles in a vectorized fashion.
        """
        base, offset = self.get_vectorize_inputs(angle_inds, data)

        angles = self.arccos(self.sum(base*offset, axis=2)/self.norm(
            base, axis=2)/self.norm(offset, axis=2))

        return angles

    def get_dihedrals(self, dihed_inds, data):
        """Calculates dihedrals in a vectorized fashion.
        """
        angle_inds = np.concatenate([[(f[i], f[i+1], f[i+2])
                                      for i in range(2)] for f in dihed_inds])
        base, offset = self.get_vectorize_inputs(angle_inds, data)
        offset_2 = base[:, 1:]

        cross_product_adj = self.cross(base, offset, axis=2)
        cp_base = cross_product_adj[:, :-1, :]
        cp_offset = cross_product_adj[:, 1:, :]

        plane_vector = self.cross(cp_offset, offset_2, axis=2)

        dihedral_cosines = self.sum(cp_base[:, ::2]*cp_offset[:, ::2],
                                    axis=2)/self.norm(
            cp_base[:, ::2], axis=2)/self.norm(cp_offset[:, ::2], axis=2)

        dihedral_sines = self.sum(cp_base[:, ::2]*plane_vector[:, ::2],
                                  axis=2)/self.norm(
            cp_base[:, ::2], axis=2)/self.norm(plane_vector[:, ::2], axis=2)

        return dihedral_cosines, dihedral_sines


# ---- cgnet/feature/feature.py ----
g = Geometry(method='torch')


class GeometryFeature(nn.Module):
    """Featurization of coarse-grained beads into pairwise distances,
    angles, and dihedrals.
    """

    def __init__(self, feature_tuples='all', n_beads=None):
        super(GeometryFeature, self).__init__()

        self._n_beads = n_beads
        if feature_tuples != 'all':
            _temp_dict = dict(zip(feature_tuples, np.arange(len(feature_tuples))))
            if len(_temp_dict) < len(feature_tuples):
                feature_tuples = list(_temp_dict.keys())
                warnings.warn(
                    "Some feature tuples are repeated and have been removed."
                    )

            self.feature_tuples = feature_tuples
            self._distance_pairs = [
                feat for feat in feature_tuples if len(feat) == 2]
            self._angle_trips = [
                feat for feat in feature_tuples if len(feat) == 3]
            self._dihedral_quads = [
                feat for feat in feature_tuples if len(feat) == 4]
        else:
            if n_beads is None:
                raise RuntimeError(
                    "Must specify n_beads if feature_tuples is 'all'."
                    )
            self._distance_pairs, _ = g.get_distance_indices(n_beads)
            if n_beads > 2:
                self._angle_trips = [(i, i+1, i+2)
                                    for i in range(n_beads-2)]
            else:
                self._angle_trips = []
            if n_beads > 3:
                self._dihedral_quads = [(i, i+1, i+2, i+3)
                                       for i in range(n_beads-3)]
            else:
                self._dihedral_quads = []
            self.feature_tuples = self._distance_pairs + \
                self._angle_trips + self._dihedral_quads

    def compute_distances(self, data):
        """Computes all pairwise distances."""
        self.distances = g.get_distances(self._distance_pairs, data, norm=True)
        self.descriptions["Distances"] = self._distance_pairs

    def compute_angles(self, data):
        """Computes planar angles."""
        self.angles = g.get_angles(self._angle_trips, data)
        self.descriptions["Angles"] = self._angle_trips

    def compute_dihedrals(self, data):
        """Computes four-term dihedral (torsional) angles."""
        (self.dihedral_cosines,
         self.dihedral_sines) = g.get_dihedrals(self._dihedral_quads, data)
        self.descriptions["Dihedral_cosines"] = self._dihedral_quads
        self.descriptions["Dihedral_sines"] = self._dihedral_quads

    def forward(self, data):
        """Obtain differentiable feature
        """
        n = len(data)

        self._coordinates = data
        self.n_beads = data.shape[1]
        if self._n_beads is not None and self.n_beads != self._n_beads:
            raise ValueError(
                "n_beads passed to __init__ does not match n_beads in data."
                )
        if np.max([np.max(bead) for bead in self.feature_tuples]) > self.n_beads - 1:
            raise ValueError(
                "Bead index in at least one feature is out of range."
            )

        self.descriptions = {}
        self.description_order = []
        out = torch.Tensor([])

        if len(self._distance_pairs) > 0:
            self.compute_distances(data)
            out = torch.cat((out, self.distances), dim=1)
            self.description_order.append('Distances')
        else:
            self.distances = torch.Tensor([])

        if len(self._angle_trips) > 0:
            self.compute_angles(data)
            out = torch.cat((out, self.angles), dim=1)
            self.description_order.append('Angles')
        else:
            self.angles = torch.Tensor([])

        if len(self._dihedral_quads) > 0:
            self.compute_dihedrals(data)
            out = torch.cat((out,
                             self.dihedral_cosines,
                             self.dihedral_sines), dim=1)
            self.description_order.append('Dihedral_cosines')
            self.description_order.append('Dihedral_sines')
        else:
            self.dihedral_cosines = torch.Tensor([])
            self.dihedral_sines = torch.Tensor([])

        return out


# ---- cgnet/feature/dataset.py ----
class MoleculeDataset(Dataset):
    """Creates dataset for coordinates and forces."""

    def __init__(self, coordinates, forces, device=torch.device('cpu')):
        self.coordinates = coordinates
        self.forces = forces
        self.device = device

    def __len__(self):
        return len(self.coordinates)

    def __getitem__(self, index):
        return (torch.tensor(self.coordinates[index], requires_grad=True,
                             device=self.device),
                torch.tensor(self.forces[index], device=self.device))


# ---- cgnet/feature/utils.py ----
def LinearLayer(
        d_in,
        d_out,
        bias=True,
        activation=None,
        dropout=0,
        weight_init='xavier',
        weight_init_args=None,
        weight_init_kwargs=None):
    """Linear layer function
    """

    seq = [nn.Linear(d_in, d_out, bias=bias)]
    if activation:
        if isinstance(activation, nn.Module):
            seq += [activation]
        else:
            raise TypeError(
                'Activation \"{}\" is not a valid torch.nn.Module'.format(
                    str(activation))
            )
    if dropout:
        seq += [nn.Dropout(dropout)]
    if weight_init == 'xavier':
        torch.nn.init.xavier_uniform_(seq[0].weight)
    if weight_init == 'identity':
        torch.nn.init.eye_(seq[0].weight)
    if weight_init not in ['xavier', 'identity', None]:
        if isinstance(weight_init, int) or isinstance(weight_init, float):
            torch.nn.init.constant_(seq[0].weight, weight_init)
        if callable(weight_init):
            if weight_init_args is None:
                weight_init_args = []
            if weight_init_kwargs is None:
                weight_init_kwargs = []
            weight_init(seq[0].weight, *weight_init_args, **weight_init_kwargs)
    return seq


# ---- cgnet/network/priors.py ----
def assemble_harmonic_inputs(prior_dict, indices):
    """Function for assembling __init__ arguments for a HarmonicLayer
    """
    feat_dict = {}
    for idx, beads, stats in zip(indices, prior_dict.keys(),
                                 prior_dict.values()):
        feat_dict[idx] = {'beads': beads,
                          'params': {'mean': stats['mean'], 'k': stats['k']}}
    return feat_dict


class _PriorLayer(nn.Module):
    """Layer for adding prior energy computations external to CGnet hidden
    output
    """

    def __init__(self, feat_data):
        super(_PriorLayer, self).__init__()
        self.params = []
        self.features = []
        self.feat_idx = []
        for idx, par in feat_data.items():
            self.feat_idx.append(idx)
            self.features.append(par['beads'])
            self.params.append(par['params'])

    def forward(self, in_feat):
        raise NotImplementedError('forward() method must be overridden in \
                                custom classes inheriting from _PriorLayer()')


class HarmonicLayer(_PriorLayer):
    """Layer for calculating bond/angle harmonic energy prior
    """

    def __init__(self, feat_data):
        super(HarmonicLayer, self).__init__(feat_data)
        for param_dict in self.params:
            if (key in param_dict for key in ('k', 'mean')):
                pass
            else:
                KeyError('Missing or incorrect key for harmonic parameters')
        self.harmonic_parameters = torch.tensor([])
        for param_dict in self.params:
            self.harmonic_parameters = torch.cat((self.harmonic_parameters,
                                       torch.tensor([[param_dict['k']],
                                       [param_dict['mean']]])), dim=1)

    def forward(self, in_feat):
        """Calculates harmonic contribution of bond/angle interactions to energy
        """

        n = len(in_feat)
        energy = torch.sum(self.harmonic_parameters[0, :] *
                           (in_feat - self.harmonic_parameters[1, :]) ** 2,
                           1).reshape(n, 1) / 2
        return energy


# ---- cgnet/network/nnet.py ----
class ForceLoss(torch.nn.Module):
    """Loss function for force matching scheme."""

    def __init__(self):
        super(ForceLoss, self).__init__()

    def forward(self, force, labels):
        """Returns force matching loss averaged over all examples.
        """
        loss = ((force - labels)**2).mean()
        return loss


class CGnet(nn.Module):
    """CGnet neural network class
    """

    def __init__(self, arch, criterion, feature=None, priors=None):
        super(CGnet, self).__init__()

        self.arch = nn.Sequential(*arch)
        if priors:
            self.priors = nn.Sequential(*priors)
        else:
            self.priors = None
        self.criterion = criterion
        self.feature = feature

    def forward(self, coord):
        """Forward pass through the network ending with autograd layer.
        """
        feat = coord
        if self.feature:
            feat = self.feature(feat)

        # forward pass through the hidden architecture of the CGnet
        energy = self.arch(feat)  # saved-by
        # addition of external priors to form total energy
        if self.priors:
            for prior in self.priors:
                energy += prior(feat[:, prior.feat_idx])  # error: IPL001

        # Perform autograd to learn potential of conservative force field
        force = torch.autograd.grad(-torch.sum(energy),
                                    coord,
                                    create_graph=True,
                                    retain_graph=True)
        return energy, force[0]


# ---- cgnet/network/utils.py ----
def lipschitz_projection(model, strength=10.0):
    """Performs L2 Lipschitz Projection via spectral normalization
    """
    for layer in model.arch:
        if isinstance(layer, nn.Linear):
            weight = layer.weight.data
            u, s, v = torch.svd(weight)
            lip_reg = torch.max(((s[0]) / strength),
                                torch.tensor([1.0]))
            layer.weight.data = weight / (lip_reg)


# ---- the training script (the example notebook, with the last layer) ----
n_frames, n_beads = 64, 5
coords = np.random.randn(n_frames, n_beads, 3).astype(np.float32)
forces = np.random.randn(n_frames, n_beads, 3).astype(np.float32)
ala_data = MoleculeDataset(coords, forces)

# bond and angle constants (GeometryStatistics.get_prior_statistics in the repository)
feature_layer = GeometryFeature(n_beads=n_beads)
with torch.no_grad():
    all_feats = feature_layer(torch.tensor(coords)).numpy()
bonds_idx = [feature_layer.feature_tuples.index((i, i+1)) for i in range(n_beads-1)]
angles_idx = [feature_layer.feature_tuples.index((i, i+1, i+2)) for i in range(n_beads-2)]
bonds_stats = {feature_layer.feature_tuples[i]: {'mean': float(all_feats[:, i].mean()),
                                                 'k': float(1.0 / all_feats[:, i].var())}
               for i in bonds_idx}
angles_stats = {feature_layer.feature_tuples[i]: {'mean': float(all_feats[:, i].mean()),
                                                  'k': float(1.0 / all_feats[:, i].var())}
                for i in angles_idx}
bonds_dict = assemble_harmonic_inputs(bonds_stats, bonds_idx)
angles_dict = assemble_harmonic_inputs(angles_stats, angles_idx)

num_feat = all_feats.shape[1]
width_layer = 16
n_layers = 3
learning_rate = 0.003
lipschitz_strength = 4.0
num_epochs = 2

layers = LinearLayer(num_feat, width_layer, activation=nn.Tanh())
for _ in range(n_layers - 1):
    layers += LinearLayer(width_layer, width_layer, activation=nn.Tanh())
layers += LinearLayer(width_layer, 1, activation=nn.Tanh())

priors = [HarmonicLayer(bonds_dict)]
priors += [HarmonicLayer(angles_dict)]

chln_net = CGnet(layers, ForceLoss(), feature=GeometryFeature(n_beads=n_beads),
                 priors=priors)

trainloader = DataLoader(ala_data, sampler=RandomSampler(ala_data),
                         batch_size=16)
optimizer = torch.optim.Adam(chln_net.parameters(), lr=learning_rate)

for epoch in range(1, num_epochs+1):
    for num, batch in enumerate(trainloader):
        optimizer.zero_grad()
        coord, force = batch
        pred_energy, pred_force = chln_net.forward(coord)
        batch_loss = chln_net.criterion(pred_force, force)
        batch_loss.backward()
        optimizer.step()

        lipschitz_projection(chln_net, strength=lipschitz_strength)
    print("Epoch: {}\tTrain: {}".format(epoch, batch_loss.item()))
