"""open-retina's single-cell Spatial Contrast LightningModule: its `optimizer_step` override steps AdamW, then clamps the softplus gain `self.nonlinearity.w.clamp_(min=0.0)`, a parameter, in place outside no_grad."""
# outcome: leaf-error
# source: https://github.com/open-retina/open-retina/pull/180
# repo: open-retina/open-retina
# category: leaf
# twin: 493_open_retina_sc_optimizer_step_clamp_fixed.py
import logging
from typing import Any, Callable, NamedTuple, Optional, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer

LOGGER = logging.getLogger(__name__)


# ---- stand-ins (not installed here) ----
def rearrange(x, pattern, **sizes):
    """einops.rearrange, for the three patterns the model uses."""
    if pattern == "b c t h w -> (b h w) c t":
        b, c, t, h, w = x.shape
        return x.permute(0, 3, 4, 1, 2).reshape(b * h * w, c, t)
    if pattern == "(b h w) 1 t -> b t h w":
        b, h, w = sizes["b"], sizes["h"], sizes["w"]
        return x.reshape(b, h, w, x.shape[-1]).permute(0, 3, 1, 2)
    if pattern == "batch time -> batch time 1":
        return x.unsqueeze(-1)
    raise ValueError(pattern)


class LightningOptimizer:
    """lightning.pytorch.core.optimizer.LightningOptimizer: the optimizer, wrapped."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self, closure=None):
        return self.optimizer.step(closure)


class LightningModule(nn.Module):
    """lightning.LightningModule: the default `optimizer_step` steps with the closure."""

    def save_hyperparameters(self, *args, **kwargs):
        pass

    def log(self, *args, **kwargs):
        pass

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        optimizer.step(closure=optimizer_closure)


class Trainer:
    """lightning.Trainer (automatic optimization): the closure runs training_step, zero_grad
    and backward; the module's `optimizer_step` gets it."""

    def __init__(self, max_epochs=1):
        self.max_epochs = max_epochs

    def fit(self, model, train_dataloaders, val_dataloaders=None):
        optimizer = LightningOptimizer(model.configure_optimizers()["optimizer"])
        for epoch in range(self.max_epochs):
            model.train()
            for batch_idx, batch in enumerate(train_dataloaders):
                def closure():
                    loss = model.training_step(batch, batch_idx)
                    optimizer.optimizer.zero_grad()
                    loss.backward()
                    return loss

                model.optimizer_step(epoch, batch_idx, optimizer, closure)
            if val_dataloaders is not None:
                model.eval()
                with torch.no_grad():
                    for batch_idx, batch in enumerate(val_dataloaders):
                        model.validation_step(batch, batch_idx)


class DataPoint(NamedTuple):
    inputs: torch.Tensor
    targets: torch.Tensor


# ---- openretina/modules/nonlinearities.py ----
class ParametrizedSoftplus(nn.Module):
    def __init__(self, a=1.0, b=0.0, w=1.0, learn_a=False):
        super().__init__()
        if learn_a:
            self.a = nn.Parameter(torch.tensor(a), requires_grad=True)
        else:
            self.a = torch.tensor(a)
        self.b = nn.Parameter(torch.tensor(b), requires_grad=True)
        self.w = nn.Parameter(torch.tensor(w), requires_grad=True)

    def forward(self, x):
        scaled_x = self.a * x + self.b
        # using torch's softplus is numerically more stable
        return self.w * nn.functional.softplus(scaled_x)


# ---- openretina/modules/losses ----
class PoissonLoss3d(torch.nn.Module):
    def __init__(self, bias: float = 1e-16, per_neuron: bool = False, avg: bool = False):
        super().__init__()
        self.bias = bias
        self.per_neuron = per_neuron
        self.avg = avg

    def forward(self, output, target):
        lag = target.size(1) - output.size(1)
        loss = output - target[:, lag:, :] * torch.log(output + self.bias)
        if not self.per_neuron:
            return loss.mean() if self.avg else loss.sum()  # loss.sum(axis=(-2)).mean()
        else:
            return loss.view(-1, loss.shape[-1]).mean(dim=0)


class CorrelationLoss3d(nn.Module):
    def __init__(self, bias: float = 1e-16, per_neuron: bool = False, avg: bool = False, negate: bool = True):
        super().__init__()
        self.eps = bias
        self.per_neuron = per_neuron
        self.avg = avg
        self.negate = negate

        # Placeholder to store last-computed per-neuron correlations
        self.register_buffer("_per_neuron_correlations", torch.tensor([]), persistent=False)

    def forward(self, output, target):
        lag = target.size(1) - output.size(1)
        delta_out = output - output.mean(1, keepdim=True)
        delta_target = target[:, lag:, :] - target[:, lag:, :].mean(1, keepdim=True)
        var_out = delta_out.pow(2).mean(1, keepdim=True)
        var_target = delta_target.pow(2).mean(1, keepdim=True)
        corrs = (delta_out * delta_target).mean(1, keepdim=True) / (
            (var_out + self.eps) * (var_target + self.eps)
        ).sqrt()

        per_neuron_correlations = corrs.view(-1, corrs.shape[-1]).mean(dim=0)
        self._per_neuron_correlations = per_neuron_correlations.detach()  # Not a loss, so no need to negate

        if self.negate:
            corrs = -corrs

        # Return scalar for possible backprop
        if not self.per_neuron:
            return corrs.mean() if self.avg else corrs.sum()
        else:
            return corrs.view(-1, corrs.shape[-1]).mean(dim=0)


def load_sta_and_extract_filters(target_spatial_shape, temporal_crop_frames, **kwargs):
    """Stand-in for openretina.utils.sta_processing: a Gaussian spatial filter and a biphasic
    temporal filter instead of ones fitted to an STA file."""
    h, w = target_spatial_shape
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    spatial = torch.exp(-((yy - h / 2) ** 2 + (xx - w / 2) ** 2) / 8.0)
    t = torch.linspace(0, 1, temporal_crop_frames)
    temporal = torch.sin(6.0 * t) * torch.exp(-3.0 * (1 - t))
    return spatial.numpy(), temporal.numpy(), {"center_y": h / 2, "center_x": w / 2}


# ---- openretina/models/spatial_contrast.py ----
class SingleCellSpatialContrast(LightningModule):
    """
    Single-cell Spatial Contrast model.

    Predicts the response of a single neuron as:

        y = a * log(1 + exp(b * (imean + w * lsc) + c))

    where imean is the spatially-weighted temporal filter output and lsc is the
    local spatial contrast (weighted standard deviation of the filtered stimulus).
    """

    # Registered buffers
    spatial_filter: torch.Tensor
    temporal_filter: torch.Tensor
    spatial_filter_sum: torch.Tensor

    def __init__(
        self,
        in_shape,
        sta_dir,
        sta_file_name: str,
        flip_sta: bool = False,
        temporal_crop_frames: int | None = None,
        sigma_contour: float = 3.0,
        spat_crop_size: tuple[int, int] | None = None,
        learning_rate: float = 1e-3,
        w_init: float = 0.0,
        a_init: float = 1.0,
        b_init: float = 1.0,
        c_init: float = 0.0,
        loss=None,
        validation_loss=None,
    ):
        super().__init__()
        self.save_hyperparameters(ignore=["loss", "validation_loss"])

        self.learning_rate = learning_rate
        self.loss = loss if loss is not None else PoissonLoss3d(per_neuron=True, avg=True)
        self.validation_loss = validation_loss if validation_loss is not None else CorrelationLoss3d(avg=True)

        # Extract frozen filters from STA
        # target_spatial_shape ensures the STA is cropped to match the stimulus dimensions
        target_spatial_shape = (in_shape[-2], in_shape[-1])
        spatial_filter, temporal_filter, gaussian_params = load_sta_and_extract_filters(
            sta_dir=sta_dir,
            file_name=sta_file_name,
            flip_sta=flip_sta,
            target_spatial_shape=target_spatial_shape,
            temporal_crop_frames=temporal_crop_frames,
            sigma_contour=sigma_contour,
        )

        self.gaussian_params = gaussian_params

        # RF center in the (possibly cropped) STA coordinate system
        full_rf_location = (int(gaussian_params["center_y"]), int(gaussian_params["center_x"]))

        self.in_shape = in_shape

        self.in_channels = in_shape[0]
        if self.in_channels > 1:
            raise ValueError(
                "The spatial contrast model only supports a single channel as input. "
                "If the data has multiple channels, consider providing an average across channels "
                "as input."
            )

        # Optionally crop a small patch around the RF to speed up computation
        self.spat_crop_size = spat_crop_size
        self.do_crop = spat_crop_size is not None and (
            in_shape[-1] != spat_crop_size[1] or in_shape[-2] != spat_crop_size[0]
        )
        self.rf_location = full_rf_location
        self._crop_bounds = None

        # Filters are registered as buffers: non-trainable but saved in state_dict
        self.register_buffer("spatial_filter", torch.from_numpy(spatial_filter))
        self.register_buffer("temporal_filter", torch.from_numpy(temporal_filter))
        self.register_buffer("spatial_filter_sum", torch.tensor(spatial_filter.sum()))

        # The 4 learnable parameters
        self.nonlinearity = ParametrizedSoftplus(w=a_init, a=b_init, b=c_init, learn_a=True)
        # The `w` here is different from the `w` used in ParametrizedSoftplus
        self.w = nn.Parameter(torch.tensor(w_init, dtype=torch.float32), requires_grad=True)

    def temporal_filter_stimulus(self, x):
        """Apply the temporal filter via 1D convolution (valid mode).

        Output time dimension is reduced by (temporal_filter_length - 1).
        """
        batch, channels, time, h, w = x.shape

        x_reshaped = rearrange(x, "b c t h w -> (b h w) c t")

        # conv1d cross-correlates, which matches STA temporal order directly
        # (index 0 = furthest past, index -1 = closest to spike)
        kernel = self.temporal_filter.view(1, 1, -1)
        filtered = F.conv1d(x_reshaped, kernel, padding=0)

        return rearrange(filtered, "(b h w) 1 t -> b t h w", b=batch, h=h, w=w)

    def compute_imean(self, temp_filtered):
        """Spatially-weighted mean: sum(spatial_filter * stimulus) / spatial_filter_sum over space."""
        weighted = self.spatial_filter * temp_filtered
        return weighted.sum(dim=(-2, -1)) / (self.spatial_filter_sum + 1e-8)

    def compute_lsc(self, temp_filtered, imean):
        """Local spatial contrast: weighted spatial standard deviation.

        lsc = sqrt( sum(spatial_filter * (stimulus - imean)^2) / sum(spatial_filter) )
        """
        imean_broadcast = imean[:, :, None, None]
        deviation_sq = (temp_filtered - imean_broadcast) ** 2
        weighted_var = (self.spatial_filter * deviation_sq).sum(dim=(-2, -1))
        return torch.sqrt(weighted_var / (self.spatial_filter_sum + 1e-8))

    def forward(self, x, data_key=None, **kwargs):
        """Compute predicted firing rate from stimulus."""
        temp_filtered = self.temporal_filter_stimulus(x)
        imean = self.compute_imean(temp_filtered)
        lsc = self.compute_lsc(temp_filtered, imean)

        combined = imean + self.w * lsc
        output = self.nonlinearity(combined)

        return rearrange(output, "batch time -> batch time 1")

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        session_id, data_point = batch

        model_output = self.forward(data_point.inputs, session_id)
        loss = self.loss.forward(model_output, data_point.targets)
        correlation = -self.validation_loss.forward(model_output, data_point.targets)

        self.log("train_loss", loss, on_step=False, on_epoch=True)
        self.log("train_correlation", correlation, on_step=False, on_epoch=True, prog_bar=True)

        return loss

    def validation_step(self, batch, batch_idx: int) -> torch.Tensor:
        session_id, data_point = batch

        model_output = self.forward(data_point.inputs, session_id)
        loss = self.loss.forward(model_output, data_point.targets) / sum(model_output.shape)
        correlation = -self.validation_loss.forward(model_output, data_point.targets)

        self.log("val_loss", loss, logger=True, prog_bar=True)
        self.log("val_correlation", correlation, logger=True, prog_bar=True)

        return loss

    def optimizer_step(
        self,
        epoch: int,
        batch_idx: int,
        optimizer: Union[Optimizer, LightningOptimizer],
        optimizer_closure: Optional[Callable[[], Any]] = None,
    ) -> None:
        """Override implementation to allow parameter clamping at each training step"""
        optimizer.step(closure=optimizer_closure)

        # To avoid negative model predictions, clamp the gain parameter in the nonlinearity
        self.nonlinearity.w.clamp_(min=0.0)  # error: IPL002

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.learning_rate)
        lr_decay_factor = 0.3
        patience = 5
        tolerance = 0.0005
        min_lr = self.learning_rate * (lr_decay_factor**3)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer,
            mode="max",
            factor=lr_decay_factor,
            patience=patience,
            threshold=tolerance,
            threshold_mode="abs",
            min_lr=min_lr,
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {
                "scheduler": scheduler,
                "monitor": "val_correlation",
                "frequency": 1,
            },
        }


if __name__ == "__main__":
    torch.manual_seed(0)
    in_shape = (1, 30, 12, 12)
    model = SingleCellSpatialContrast(
        in_shape=in_shape, sta_dir="stas", sta_file_name="cell_data_04_WN_stas_cell_2.npy",
        temporal_crop_frames=10, learning_rate=0.01, w_init=0.0, a_init=1.0, b_init=1.0, c_init=0.0,
    )
    train_batches = [("04", DataPoint(torch.randn(2, *in_shape), torch.rand(2, 30, 1) * 3)) for _ in range(3)]
    val_batches = [("04", DataPoint(torch.randn(2, *in_shape), torch.rand(2, 30, 1) * 3))]
    trainer = Trainer(max_epochs=2)
    trainer.fit(model, train_batches, val_batches)
    print(model.nonlinearity.w.item(), model.w.item())
