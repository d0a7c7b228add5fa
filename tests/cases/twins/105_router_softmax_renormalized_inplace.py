"""Twin of 105_router_softmax_renormalized_inplace.py, written out of place by hand: the top-k softmax weights renormalized with `/` instead of `/=`."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Router(nn.Module):
    def __init__(self, dim: int, num_experts: int, top_k: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, num_experts)
        self.experts = nn.Linear(dim, dim * num_experts)
        self.top_k = top_k
        self.norm_topk_prob = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores, indices = self.gate(x).topk(self.top_k, dim=-1)
        routing_weights = F.softmax(scores, dim=-1)
        if self.norm_topk_prob:
            routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        expert_out = self.experts(x).view(x.shape[0], -1, x.shape[1])
        chosen = expert_out.gather(1, indices.unsqueeze(-1).expand(-1, -1, x.shape[1]))
        return (chosen * routing_weights.unsqueeze(-1)).sum(dim=1)


def run() -> None:
    torch.manual_seed(0)
    router = Router(8, 4, 2)
    router(torch.randn(6, 8)).pow(2).mean().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    router = Router(8, 4, 2)
    router(torch.randn(6, 8)).pow(2).mean().backward()
    return {name: p.grad for name, p in router.named_parameters()}
