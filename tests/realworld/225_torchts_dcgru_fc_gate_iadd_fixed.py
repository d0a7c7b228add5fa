"""TorchTS DCRNN with fully-connected reset/update gates, fixed as PR #59 did: DCGRUCell._fc returns `torch.matmul(x, self._ru_weights) + self._ru_biases` out of place (the PR also drops the redundant inner sigmoid; forward applies the gate sigmoid)."""
# outcome: ok
# source: https://github.com/Rose-STL-Lab/torchTS/issues/50
# repo: Rose-STL-Lab/torchTS
# category: residual
# twin: 224_torchts_dcgru_fc_gate_iadd.py
from abc import abstractmethod
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from pytorch_lightning import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


# ---- torchts/utils/graph.py (scipy.sparse is not installed here: the random-walk matrices in numpy) ----
class graph:
    @staticmethod
    def random_walk(adj_mx):
        d = np.array(adj_mx.sum(1))
        d_inv = np.power(d, -1).flatten()
        d_inv[np.isinf(d_inv)] = 0.0
        return (np.diag(d_inv) @ adj_mx).astype(np.float32)

    @staticmethod
    def reverse_random_walk(adj_mx):
        return graph.random_walk(np.transpose(adj_mx))

    @staticmethod
    def sparse_matrix(L):
        return torch.from_numpy(np.ascontiguousarray(L)).to_sparse()


# ---- torchts/utils/data.py ----
def concat(a, b):
    return torch.cat([a, b.unsqueeze(0)], dim=0)


# ---- torchts/nn/graph.py ----
class DCGRUCell(nn.Module):
    def __init__(
        self,
        num_units,
        adj_mx,
        max_diffusion_step,
        num_nodes,
        input_dim,
        activation=torch.tanh,
        filter_type="laplacian",
        use_gc_for_ru=True,
    ):
        super().__init__()
        self._activation = activation
        self._num_nodes = num_nodes
        self._num_units = num_units
        self._max_diffusion_step = max_diffusion_step
        self._use_gc_for_ru = use_gc_for_ru

        supports = []

        if filter_type == "random_walk":
            supports.append(graph.random_walk(adj_mx).T)
        elif filter_type == "dual_random_walk":
            supports.append(graph.random_walk(adj_mx).T)
            supports.append(graph.reverse_random_walk(adj_mx).T)

        for i in range(len(supports)):
            supports[i] = graph.sparse_matrix(supports[i])

        supports = torch.cat([s.unsqueeze(dim=0) for s in supports])
        self.register_buffer("_supports", supports)

        num_matrices = len(supports) * self._max_diffusion_step + 1
        input_size_gconv = (self._num_units + input_dim) * num_matrices

        if self._use_gc_for_ru:
            input_size_ru = input_size_gconv
        else:
            input_size_ru = self._num_units + input_dim

        output_size = 2 * self._num_units
        self._ru_weights = nn.Parameter(torch.empty(input_size_ru, output_size))
        self._ru_biases = nn.Parameter(torch.empty(output_size))
        nn.init.xavier_normal_(self._ru_weights, gain=1.0)
        nn.init.constant_(self._ru_biases, val=1.0)

        output_size = self._num_units
        self._gconv_weights = nn.Parameter(torch.empty(input_size_gconv, output_size))
        self._gconv_biases = nn.Parameter(torch.empty(output_size))
        nn.init.xavier_normal_(self._gconv_weights, gain=1.0)
        nn.init.constant_(self._gconv_biases, val=0.0)

    def forward(self, inputs, hx):
        fn = self._gconv if self._use_gc_for_ru else self._fc
        output_size = 2 * self._num_units
        value = torch.sigmoid(fn(inputs, hx, output_size, bias_start=1.0, reset=True))
        value = torch.reshape(value, (-1, self._num_nodes, output_size))
        r, u = torch.split(tensor=value, split_size_or_sections=self._num_units, dim=-1)
        r = torch.reshape(r, (-1, self._num_nodes * self._num_units))
        u = torch.reshape(u, (-1, self._num_nodes * self._num_units))
        c = self._gconv(inputs, r * hx, self._num_units)

        if self._activation is not None:
            c = self._activation(c)

        return u * hx + (1.0 - u) * c

    def _fc(self, inputs, state, output_size, bias_start=0.0, reset=True):
        batch_size = inputs.shape[0]
        shape = (batch_size * self._num_nodes, -1)
        inputs = torch.reshape(inputs, shape)
        state = torch.reshape(state, shape)
        x = torch.cat([inputs, state], dim=-1)

        return torch.matmul(x, self._ru_weights) + self._ru_biases

    def _gconv(self, inputs, state, output_size, bias_start=0.0, reset=False):
        batch_size = inputs.shape[0]
        shape = (batch_size, self._num_nodes, -1)
        inputs = torch.reshape(inputs, shape)
        state = torch.reshape(state, shape)
        inputs_and_state = torch.cat([inputs, state], dim=2)
        input_size = inputs_and_state.size(2)

        x = inputs_and_state
        x0 = x.permute(1, 2, 0)
        x0 = torch.reshape(x0, shape=[self._num_nodes, input_size * batch_size])
        x = torch.unsqueeze(x0, 0)

        if self._max_diffusion_step > 0:
            for support in self._supports:
                x1 = torch.sparse.mm(support, x0)
                x = concat(x, x1)

                for _ in range(2, self._max_diffusion_step + 1):
                    x2 = 2 * torch.sparse.mm(support, x1) - x0
                    x = concat(x, x2)
                    x1, x0 = x2, x1

        num_matrices = len(self._supports) * self._max_diffusion_step + 1
        x = torch.reshape(
            x, shape=[num_matrices, self._num_nodes, input_size, batch_size]
        )
        x = x.permute(3, 1, 2, 0)
        x = torch.reshape(
            x, shape=[batch_size * self._num_nodes, input_size * num_matrices]
        )

        if reset:
            weights, biases = self._ru_weights, self._ru_biases
        else:
            weights, biases = self._gconv_weights, self._gconv_biases

        x = torch.matmul(x, weights) + biases

        return torch.reshape(x, [batch_size, self._num_nodes * output_size])


class DCGRU(nn.Module):
    def __init__(
        self,
        num_layers,
        num_units,
        adj_mx,
        max_diffusion_step,
        num_nodes,
        input_dim,
        activation=torch.tanh,
        filter_type="laplacian",
        use_gc_for_ru=True,
    ):
        super().__init__()
        self.layers = nn.ModuleList(
            DCGRUCell(
                num_units,
                adj_mx,
                max_diffusion_step,
                num_nodes,
                input_dim if i == 0 else num_units,
                filter_type=filter_type,
                use_gc_for_ru=use_gc_for_ru,
            )
            for i in range(num_layers)
        )

    def forward(self, inputs, hidden_state):
        hidden_states = []
        output = inputs

        for i, layer in enumerate(self.layers):
            output = layer(output, hidden_state[i])
            hidden_states.append(output)

        return output, torch.stack(hidden_states)


# ---- torchts/nn/model.py ----
class TimeSeriesModel(LightningModule):
    """Base class for all TorchTS models.

    Args:
        criterion: Loss function
        optimizer (torch.optim.Optimizer): Optimizer
    """

    def __init__(
        self,
        optimizer,
        optimizer_args=None,
        criterion=F.mse_loss,
        scheduler=None,
        scheduler_args=None,
        scaler=None,
    ):
        super().__init__()
        self.criterion = criterion
        self.scaler = scaler

        if optimizer_args is not None:
            self.optimizer = partial(optimizer, **optimizer_args)
        else:
            self.optimizer = optimizer

        if scheduler is not None and scheduler_args is not None:
            self.scheduler = partial(scheduler, **scheduler_args)
        else:
            self.scheduler = scheduler

    def fit(self, x, y, max_epochs=10, batch_size=128):
        """Fits model to the given data.

        Args:
            x (torch.Tensor): Input data
            y (torch.Tensor): Output data
            max_epochs (int): Number of training epochs
            batch_size (int): Batch size for torch.utils.data.DataLoader
        """
        dataset = TensorDataset(x, y)
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
        self.train_dataloader = lambda: loader  # Lightning's fit patches this hook in; the stand-in does not
        trainer = Trainer(max_epochs=max_epochs)
        trainer.fit(self, loader)

    def prepare_batch(self, batch):
        return batch

    def _step(self, batch, batch_idx, num_batches):
        x, y = self.prepare_batch(batch)

        if self.training:
            batches_seen = batch_idx + self.current_epoch * num_batches
        else:
            batches_seen = batch_idx

        pred = self(x, y, batches_seen)

        if self.scaler is not None:
            y = self.scaler.inverse_transform(y)
            pred = self.scaler.inverse_transform(pred)

        loss = self.criterion(pred, y)
        return loss

    def training_step(self, batch, batch_idx):
        train_loss = self._step(batch, batch_idx, len(self.train_dataloader()))
        self.log(
            "train_loss",
            train_loss,
            on_step=True,
            on_epoch=True,
            prog_bar=True,
            logger=True,
        )
        return train_loss

    @abstractmethod
    def forward(self, x, y=None, batches_seen=None):
        """Forward pass."""

    def configure_optimizers(self):
        optimizer = self.optimizer(self.parameters())

        if self.scheduler is not None:
            scheduler = self.scheduler(optimizer)
            return [optimizer], [scheduler]

        return optimizer


# ---- torchts/nn/models/dcrnn.py ----
class Encoder(nn.Module):
    def __init__(self, input_dim, seq_len, **kwargs):
        super().__init__()
        self.input_dim = input_dim
        self.seq_len = seq_len
        self.dcgru = DCGRU(input_dim=self.input_dim, **kwargs)

    def forward(self, inputs, hidden_state):
        output, hidden = self.dcgru(inputs, hidden_state)
        return output, hidden


class Decoder(nn.Module):
    def __init__(self, output_dim, horizon, **kwargs):
        super().__init__()
        self.output_dim = output_dim
        self.horizon = horizon
        self.num_nodes = kwargs["num_nodes"]
        self.num_units = kwargs["num_units"]
        self.dcgru = DCGRU(input_dim=self.output_dim, **kwargs)
        self.projection_layer = nn.Linear(self.num_units, self.output_dim)

    def forward(self, inputs, hidden_state):
        output, hidden = self.dcgru(inputs, hidden_state)
        projected = self.projection_layer(output.view(-1, self.num_units))
        output = projected.view(-1, self.num_nodes * self.output_dim)
        return output, hidden


class DCRNN(TimeSeriesModel):
    def __init__(
        self,
        adj_mx,
        num_units,
        seq_len=1,
        horizon=1,
        input_dim=1,
        output_dim=1,
        max_diffusion_step=2,
        filter_type="laplacian",
        num_nodes=1,
        num_layers=1,
        use_gc_for_ru=True,
        use_curriculum_learning=False,
        cl_decay_steps=1000,
        **kwargs,
    ):
        super().__init__(**kwargs)

        dcgru_args = {
            "adj_mx": adj_mx,
            "num_nodes": num_nodes,
            "num_layers": num_layers,
            "num_units": num_units,
            "max_diffusion_step": max_diffusion_step,
            "filter_type": filter_type,
            "use_gc_for_ru": use_gc_for_ru,
        }

        self.encoder_model = Encoder(input_dim, seq_len, **dcgru_args)
        self.decoder_model = Decoder(output_dim, horizon, **dcgru_args)

        self.num_nodes = num_nodes
        self.num_layers = num_layers
        self.hidden_state_size = num_nodes * num_units
        self.use_curriculum_learning = use_curriculum_learning
        self.cl_decay_steps = cl_decay_steps

    def _compute_sampling_threshold(self, batches_seen):
        return self.cl_decay_steps / (
            self.cl_decay_steps + np.exp(batches_seen / self.cl_decay_steps)
        )

    def encoder(self, inputs):
        batch_size = inputs.size(1)
        shape = self.num_layers, batch_size, self.hidden_state_size
        encoder_hidden_state = torch.zeros(shape, device=self.device)

        for t in range(self.encoder_model.seq_len):
            _, encoder_hidden_state = self.encoder_model(
                inputs[t], encoder_hidden_state
            )

        return encoder_hidden_state

    def decoder(self, encoder_hidden_state, labels=None, batches_seen=None):
        batch_size = encoder_hidden_state.size(1)
        shape = batch_size, self.num_nodes * self.decoder_model.output_dim
        go_symbol = torch.zeros(shape, device=self.device)
        decoder_hidden_state = encoder_hidden_state
        decoder_input = go_symbol
        outputs = []

        for t in range(self.decoder_model.horizon):
            decoder_output, decoder_hidden_state = self.decoder_model(
                decoder_input, decoder_hidden_state
            )
            decoder_input = decoder_output
            outputs.append(decoder_output)

            if self.training and self.use_curriculum_learning:
                c = np.random.uniform(0, 1)

                if c < self._compute_sampling_threshold(batches_seen):
                    decoder_input = labels[t]

        outputs = torch.stack(outputs)
        return outputs

    def forward(self, inputs, labels=None, batches_seen=None):
        encoder_hidden_state = self.encoder(inputs)
        outputs = self.decoder(encoder_hidden_state, labels, batches_seen=batches_seen)

        return outputs

    def prepare_batch(self, batch):
        x, y = batch
        x = x.permute(1, 0, 2, 3)
        y = y.permute(1, 0, 2, 3)

        batch_size = x.size(1)
        x = x.view(
            self.encoder_model.seq_len,
            batch_size,
            self.num_nodes * self.encoder_model.input_dim,
        )
        y = y[..., : self.decoder_model.output_dim].view(
            self.decoder_model.horizon,
            batch_size,
            self.num_nodes * self.decoder_model.output_dim,
        )

        return x, y


if __name__ == "__main__":
    # a METR-LA-like toy problem: 5 sensors, 3 input steps, 2 predicted steps
    torch.manual_seed(0)
    np.random.seed(0)
    num_nodes, seq_len, horizon = 5, 3, 2
    adj_mx = (np.random.rand(num_nodes, num_nodes) > 0.5).astype(np.float32) + np.eye(num_nodes, dtype=np.float32)
    x = torch.randn(8, seq_len, num_nodes, 1)
    y = torch.randn(8, horizon, num_nodes, 1)

    model = DCRNN(
        adj_mx,
        num_units=4,
        seq_len=seq_len,
        horizon=horizon,
        num_nodes=num_nodes,
        filter_type="dual_random_walk",
        use_gc_for_ru=False,
        optimizer=torch.optim.Adam,
        optimizer_args={"lr": 0.01},
    )
    model.fit(x, y, max_epochs=1, batch_size=4)
