"""PEFT LoRA on a Linear: the frozen base weight is merged and unmerged in place through `.data` (`base_layer.weight.data += delta_weight`, `weight.data -= delta_weight`, where `delta_weight = lora_B.weight @ lora_A.weight * scaling` is grad-tracked) between LoRA training phases, and the safe merge writes `base_layer.weight.data = orig_weight`."""
# outcome: ok
# source: https://github.com/huggingface/peft/blob/main/src/peft/tuners/lora/layer.py
# repo: huggingface/peft
# category: leaf
import math
import warnings
from typing import Any, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- stand-ins for peft's LoraConfig, utils and the LoraLayer base (the vanilla-LoRA parts) ----
class LoraConfig:
    def __init__(self, r=4, lora_alpha=8, lora_dropout=0.0, fan_in_fan_out=False, init_lora_weights=True, lora_bias=False):
        self.r, self.lora_alpha, self.lora_dropout = r, lora_alpha, lora_dropout
        self.fan_in_fan_out, self.init_lora_weights, self.lora_bias = fan_in_fan_out, init_lora_weights, lora_bias


def transpose(weight, fan_in_fan_out):
    if not fan_in_fan_out:
        return weight
    return weight.T


def check_adapters_to_merge(module, adapter_names=None):
    if adapter_names is None:
        adapter_names = module.active_adapters
    return [name for name in adapter_names if name not in module.merged_adapters]


class LoraLayer:
    def __init__(self, base_layer: nn.Module, **kwargs) -> None:
        self.base_layer = base_layer
        self.r = {}
        self.lora_alpha = {}
        self.scaling = {}
        self.lora_dropout = nn.ModuleDict({})
        self.lora_A = nn.ModuleDict({})
        self.lora_B = nn.ModuleDict({})
        self.lora_bias: dict[str, bool] = {}
        self.lora_variant = {}
        self.merged_adapters = []
        self.disable_adapters = False
        self.in_features, self.out_features = base_layer.in_features, base_layer.out_features

    @property
    def merged(self) -> bool:
        return bool(self.merged_adapters)

    @property
    def active_adapters(self):
        return [self._active_adapter]

    def get_base_layer(self):
        return self.base_layer

    def _cast_input_dtype(self, x, dtype):
        return x.to(dtype)

    def update_layer(self, adapter_name, r, lora_alpha, config, **kwargs):
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        if config.lora_dropout > 0.0:
            lora_dropout_layer = nn.Dropout(p=config.lora_dropout)
        else:
            lora_dropout_layer = nn.Identity()
        self.lora_dropout.update(nn.ModuleDict({adapter_name: lora_dropout_layer}))
        self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)
        self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=config.lora_bias)
        self.lora_bias[adapter_name] = config.lora_bias
        self.scaling[adapter_name] = lora_alpha / r
        self.reset_lora_parameters(adapter_name, config.init_lora_weights)

    def reset_lora_parameters(self, adapter_name, init_lora_weights):
        if init_lora_weights is not False:
            if adapter_name in self.lora_A.keys():
                if init_lora_weights is True:
                    # initialize A the same way as the default for nn.Linear and B to zero
                    # https://github.com/microsoft/LoRA/blob/a0a92e0f26c067cf94747bdbf1ce73793fa44d19/loralib/layers.py#L124
                    nn.init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
                elif init_lora_weights.lower() == "gaussian":
                    nn.init.normal_(self.lora_A[adapter_name].weight, std=1 / self.r[adapter_name])
                else:
                    raise ValueError(f"Unknown initialization {init_lora_weights=}")
                nn.init.zeros_(self.lora_B[adapter_name].weight)
                if self.lora_bias[adapter_name]:
                    nn.init.zeros_(self.lora_B[adapter_name].bias)


# ---- src/peft/tuners/lora/layer.py ----
class Linear(nn.Module, LoraLayer):
    # Lora implemented in a dense layer
    def __init__(
        self,
        base_layer,
        adapter_name: str,
        config: LoraConfig,
        r: int = 0,
        lora_alpha: int = 1,
        is_target_conv_1d_layer: bool = False,
        **kwargs,
    ) -> None:
        super().__init__()
        LoraLayer.__init__(self, base_layer, **kwargs)
        self.fan_in_fan_out = config.fan_in_fan_out

        self._active_adapter = adapter_name
        self.update_layer(
            adapter_name,
            r,
            lora_alpha=lora_alpha,
            config=config,
            **kwargs,
        )
        self.is_target_conv_1d_layer = is_target_conv_1d_layer

    def merge(self, safe_merge: bool = False, adapter_names: Optional[list[str]] = None) -> None:
        """
        Merge the active adapter weights into the base weights

        Args:
            safe_merge (`bool`, *optional*):
                If True, the merge operation will be performed in a copy of the original weights and check for NaNs
                before merging the weights. This is useful if you want to check if the merge operation will produce
                NaNs. Defaults to `False`.
            adapter_names (`list[str]`, *optional*):
                The list of adapter names that should be merged. If None, all active adapters will be merged. Defaults
                to `None`.
        """
        adapter_names = check_adapters_to_merge(self, adapter_names)
        if not adapter_names:
            # no adapter to merge
            return

        for active_adapter in adapter_names:
            if active_adapter in self.lora_A.keys():
                base_layer = self.get_base_layer()
                if safe_merge:
                    # Note that safe_merge will be slower than the normal merge
                    # because of the copy operation.
                    orig_weight = base_layer.weight.data.clone()
                    orig_dtype = orig_weight.dtype
                    if active_adapter not in self.lora_variant:  # vanilla LoRA
                        delta_weight = self.get_delta_weight(active_adapter)
                        orig_weight += delta_weight.to(orig_dtype)

                    if not torch.isfinite(orig_weight).all():
                        raise ValueError(
                            f"NaNs detected in the merged weights. The adapter {active_adapter} seems to be broken"
                        )

                    base_layer.weight.data = orig_weight

                    if self.lora_bias[active_adapter]:
                        if getattr(base_layer, "bias", None) is None:
                            raise RuntimeError(
                                "Impossible to merge LoRA with `lora_bias=True` because the base layer has no bias."
                            )
                        new_bias = base_layer.bias + self.lora_B[active_adapter].bias * self.scaling[active_adapter]
                        if not torch.isfinite(new_bias).all():
                            raise ValueError(
                                f"NaNs detected in the merged weights. The adapter {active_adapter} seems to be broken"
                            )
                        base_layer.bias.data = new_bias.to(orig_dtype)

                else:
                    if active_adapter not in self.lora_variant:  # vanilla LoRA
                        delta_weight = self.get_delta_weight(active_adapter)
                        base_layer.weight.data += delta_weight

                    if self.lora_bias[active_adapter]:
                        if getattr(base_layer, "bias", None) is None:
                            raise RuntimeError(
                                "Impossible to merge LoRA with `lora_bias=True` because the base layer has no bias."
                            )
                        base_layer.bias.data += self.lora_B[active_adapter].bias * self.scaling[active_adapter]

                self.merged_adapters.append(active_adapter)

    def unmerge(self) -> None:
        """
        This method unmerges all merged adapter layers from the base weights.
        """

        if not self.merged:
            warnings.warn("Already unmerged. Nothing to do.")
            return
        while len(self.merged_adapters) > 0:
            active_adapter = self.merged_adapters.pop()
            if active_adapter in self.lora_A.keys():
                weight = self.get_base_layer().weight
                if active_adapter not in self.lora_variant:  # vanilla LoRA
                    orig_dtype = weight.dtype
                    delta_weight = self.get_delta_weight(active_adapter)
                    weight.data -= delta_weight.to(orig_dtype)

                if self.lora_bias[active_adapter]:
                    self.get_base_layer().bias.data -= self.lora_B[active_adapter].bias * self.scaling[active_adapter]

    def get_delta_weight(self, adapter) -> torch.Tensor:
        """
        Compute the delta weight for the given adapter.

        Args:
            adapter (str):
                The name of the adapter for which the delta weight should be computed.
        """
        device = self.lora_B[adapter].weight.device
        dtype = self.lora_B[adapter].weight.dtype

        # In case users wants to merge the adapter weights that are in
        # (b)float16 while being on CPU, we need to cast the weights to float32, perform the merge and then cast back to
        # (b)float16 because some CPUs have slow bf16/fp16 matmuls.
        cast_to_fp32 = device.type == "cpu" and (dtype == torch.float16 or dtype == torch.bfloat16)

        weight_A = self.lora_A[adapter].weight
        weight_B = self.lora_B[adapter].weight

        if cast_to_fp32:
            weight_A = weight_A.float()
            weight_B = weight_B.float()

        output_tensor = transpose(weight_B @ weight_A, self.fan_in_fan_out) * self.scaling[adapter]

        if cast_to_fp32:
            output_tensor = output_tensor.to(dtype=dtype)

        return output_tensor

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        adapter_names = kwargs.pop("adapter_names", None)

        if self.disable_adapters:
            if self.merged:
                self.unmerge()
            result = self.base_layer(x, *args, **kwargs)
        elif self.merged:
            result = self.base_layer(x, *args, **kwargs)
        else:
            result = self.base_layer(x, *args, **kwargs)
            torch_result_dtype = result.dtype

            lora_A_keys = self.lora_A.keys()
            for active_adapter in self.active_adapters:
                if active_adapter not in lora_A_keys:
                    continue

                lora_A = self.lora_A[active_adapter]
                lora_B = self.lora_B[active_adapter]
                dropout = self.lora_dropout[active_adapter]
                scaling = self.scaling[active_adapter]
                x = self._cast_input_dtype(x, lora_A.weight.dtype)
                if active_adapter not in self.lora_variant:  # vanilla LoRA
                    result = result + lora_B(lora_A(dropout(x))) * scaling

            result = result.to(torch_result_dtype)

        return result


# ---- what get_peft_model does for target_modules=["q", "v"]: wrap them, freeze the rest ----
class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.q(x)) * torch.sigmoid(self.v(x)))


def get_peft_model(model, config):
    for p in model.parameters():
        p.requires_grad_(False)
    for name in ("q", "v"):
        setattr(model, name, Linear(getattr(model, name), "default", config, r=config.r, lora_alpha=config.lora_alpha))
    return model


def train(model, optimizer, steps):
    for step in range(steps):
        x, y = torch.randn(8, 16), torch.randint(0, 3, (8,))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1)
    model = get_peft_model(Block(), config)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    print("phase 1", train(model, optimizer, 3))
    # evaluate with the adapters merged into the base weights, then unmerge and keep training
    model.q.merge()
    model.v.merge(safe_merge=True)
    model.eval()
    with torch.no_grad():
        print(model(torch.randn(2, 16)))
    model.q.unmerge()
    model.v.unmerge()
    model.train()
    print("phase 2", train(model, optimizer, 3))
