"""ESMFold-style trunk: replacing an item of the dict of outputs is not an in-place write on any tensor, although the tensor it held was saved."""
# outcome: ok
import torch
import torch.nn as nn


class StructureHead(nn.Module):
    def __init__(self, c_s: int, c_z: int) -> None:
        super().__init__()
        self.layer_norm_s = nn.LayerNorm(c_s)
        self.layer_norm_z = nn.LayerNorm(c_z)
        self.out = nn.Linear(c_s + c_z, 3)

    def forward(self, outputs: dict[str, torch.Tensor], offload: bool = True) -> torch.Tensor:
        s = self.layer_norm_s(outputs["single"])
        z = self.layer_norm_z(outputs["pair"])
        if offload:
            outputs["pair"] = outputs["pair"].cpu()
            outputs["single"] = torch.zeros_like(s)
        return self.out(torch.cat([s, z.mean(dim=1)], dim=-1))


def run() -> None:
    torch.manual_seed(0)
    head = StructureHead(6, 4)
    outputs = {
        "single": torch.randn(5, 6, requires_grad=True),
        "pair": torch.randn(5, 5, 4, requires_grad=True),
    }
    head(outputs).sum().backward()
