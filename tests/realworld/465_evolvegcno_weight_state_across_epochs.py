"""pytorch_geometric_temporal's EvolveGCNO example: the layer keeps its GRU-evolved GCN weight on `self.weight` from one forward to the next, so epoch 2's `cost.backward(retain_graph=True)` runs back into epoch 1's graph, whose GRU weights Adam has already stepped."""
# outcome: inplace-error
# source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/305
# repo: benedekrozemberczki/pytorch_geometric_temporal
# category: iteration
# twin: 466_evolvegcno_weight_state_across_epochs_fixed.py
def tqdm(iterable):
    return iterable

import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import GRU


# ---- torch_geometric, the part used here (glorot, gcn_norm, MessagePassing.propagate) ----
def glorot(value):
    if value is not None:
        stdv = math.sqrt(6.0 / (value.size(-2) + value.size(-1)))
        value.data.uniform_(-stdv, stdv)


def gcn_norm(edge_index, edge_weight=None, num_nodes=None, improved=False, add_self_loops=True):
    fill_value = 2. if improved else 1.
    if edge_weight is None:
        edge_weight = torch.ones(edge_index.size(1))
    if add_self_loops:
        loop = torch.arange(num_nodes)
        edge_index = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
        edge_weight = torch.cat([edge_weight, torch.full((num_nodes,), fill_value)])
    row, col = edge_index[0], edge_index[1]
    deg = torch.zeros(num_nodes).index_add(0, col, edge_weight)
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt = torch.where(torch.isinf(deg_inv_sqrt), torch.zeros_like(deg_inv_sqrt), deg_inv_sqrt)
    return edge_index, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]


class MessagePassing(torch.nn.Module):
    def __init__(self, aggr='add', node_dim=-2):
        super().__init__()
        self.aggr = aggr
        self.node_dim = node_dim

    def propagate(self, edge_index, x, edge_weight=None, size=None):
        x_j = x[edge_index[0]]
        msg = self.message(x_j, edge_weight)
        return torch.zeros(x.size(0), msg.size(-1)).index_add(0, edge_index[1], msg)


# ---- torch_geometric_temporal/nn/recurrent/evolvegcno.py ----
class GCNConv_Fixed_W(MessagePassing):
    r"""The graph convolutional operator adapted from the `"Semi-supervised
    Classification with Graph Convolutional Networks"
    <https://arxiv.org/abs/1609.02907>`_ paper, with weights not trainable.
    """

    _cached_edge_index: Optional[Tuple[Tensor, Tensor]]

    def __init__(self, in_channels: int, out_channels: int,
                 improved: bool = False, cached: bool = False,
                 add_self_loops: bool = True, normalize: bool = True,
                **kwargs):

        kwargs.setdefault('aggr', 'add')
        super(GCNConv_Fixed_W, self).__init__(**kwargs)

        self.in_channels = in_channels
        self.out_channels = out_channels
        self.improved = improved
        self.cached = cached
        self.add_self_loops = add_self_loops
        self.normalize = normalize

        self._cached_edge_index = None
        self._cached_adj_t = None

        self.reset_parameters()

    def reset_parameters(self):
        self._cached_edge_index = None
        self._cached_adj_t = None

    def forward(self, W: torch.FloatTensor, x: Tensor, edge_index,
                edge_weight=None) -> Tensor:
        """"""

        if self.normalize:
            cache = self._cached_edge_index
            if cache is None:
                edge_index, edge_weight = gcn_norm(  # yapf: disable
                    edge_index, edge_weight, x.size(self.node_dim),
                    self.improved, self.add_self_loops)

        x = torch.matmul(x, W)

        # propagate_type: (x: Tensor, edge_weight: OptTensor)
        out = self.propagate(edge_index, x=x, edge_weight=edge_weight,
                             size=None)

        return out

    def message(self, x_j: Tensor, edge_weight) -> Tensor:
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j


class EvolveGCNO(torch.nn.Module):
    r"""An implementation of the Evolving Graph Convolutional without Hidden Layer."""

    def __init__(
        self,
        in_channels: int,
        improved: bool = False,
        cached: bool = False,
        normalize: bool = True,
        add_self_loops: bool = True,
    ):
        super(EvolveGCNO, self).__init__()

        self.in_channels = in_channels
        self.improved = improved
        self.cached = cached
        self.normalize = normalize
        self.add_self_loops = add_self_loops
        self.initial_weight = torch.nn.Parameter(torch.Tensor(1, in_channels, in_channels))
        self.weight = None
        self._create_layers()
        self.reset_parameters()

    def reset_parameters(self):
        glorot(self.initial_weight)

    def reinitialize_weight(self):
        self.weight = None

    def _create_layers(self):

        self.recurrent_layer = GRU(
            input_size=self.in_channels, hidden_size=self.in_channels, num_layers=1
        )
        for param in self.recurrent_layer.parameters():
            param.requires_grad = True
            param.retain_grad()

        self.conv_layer = GCNConv_Fixed_W(
            in_channels=self.in_channels,
            out_channels=self.in_channels,
            improved=self.improved,
            cached=self.cached,
            normalize=self.normalize,
            add_self_loops=self.add_self_loops
        )

    def forward(
        self,
        X: torch.FloatTensor,
        edge_index: torch.LongTensor,
        edge_weight: torch.FloatTensor = None,
    ) -> torch.FloatTensor:
        if self.weight is None:
            _, self.weight = self.recurrent_layer(self.initial_weight, self.initial_weight)
        else:
            _, self.weight = self.recurrent_layer(self.weight, self.weight)  # saved-by
        X = self.conv_layer(self.weight.squeeze(dim=0), X, edge_index, edge_weight)
        return X


# ---- random snapshots stand in for ChickenpoxDatasetLoader (20 counties, 4 lags) ----
class Snapshot:
    def __init__(self, x, edge_index, edge_attr, y):
        self.x, self.edge_index, self.edge_attr, self.y = x, edge_index, edge_attr, y


_edge_index = torch.randint(0, 20, (2, 60))
_snapshots = [Snapshot(torch.randn(20, 4), _edge_index, torch.rand(60), torch.randn(20, 1)) for _ in range(8)]
train_dataset, test_dataset = _snapshots[:5], _snapshots[5:]


# ---- examples/recurrent/evolvegcno_example.py ----
class RecurrentGCN(torch.nn.Module):
    def __init__(self, node_features):
        super(RecurrentGCN, self).__init__()
        self.recurrent = EvolveGCNO(node_features)
        self.linear = torch.nn.Linear(node_features, 1)

    def forward(self, x, edge_index, edge_weight):
        h = self.recurrent(x, edge_index, edge_weight)
        h = F.relu(h)
        h = self.linear(h)
        return h
        
model = RecurrentGCN(node_features = 4)
for param in model.parameters():
    param.retain_grad()

optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

model.train()

for epoch in tqdm(range(3)):
    cost = 0
    for time, snapshot in enumerate(train_dataset):
        y_hat = model(snapshot.x, snapshot.edge_index, snapshot.edge_attr)
        cost = cost + torch.mean((y_hat-snapshot.y)**2)
    cost = cost / (time+1)
    cost.backward(retain_graph=True)
    optimizer.step()  # error: IPL007
    optimizer.zero_grad()
    
model.eval()
cost = 0
for time, snapshot in enumerate(test_dataset):
    if time == 0:
        model.recurrent.weight = None
    y_hat = model(snapshot.x, snapshot.edge_index, snapshot.edge_attr)
    cost = cost + torch.mean((y_hat-snapshot.y)**2)
cost = cost / (time+1)
cost = cost.item()
print("MSE: {:.4f}".format(cost))
