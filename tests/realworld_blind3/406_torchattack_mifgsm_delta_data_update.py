"""torchattack's MI-FGSM attack: the perturbation `delta` is a leaf that requires grad; after each backward it is moved by assigning `delta.data`, and its gradient is zeroed with `delta.grad.detach_()` / `delta.grad.zero_()`."""
# outcome: ok
# source: https://github.com/spencerwooo/torchattack/blob/main/torchattack/mifgsm.py
# repo: spencerwooo/torchattack
# category: leaf
# torchattack/attack.py (the Attack base, without the registry) and torchattack/mifgsm.py, run on a
# tiny CNN classifier with random images instead of a torchvision model and an image folder.
from abc import ABC, abstractmethod
from typing import Any, Callable

import torch
import torch.nn as nn


# ---- torchattack/attack_model.py (the part used here) ----
class AttackModel:
    def __init__(self, model: nn.Module) -> None:
        self.model = model


# ---- torchattack/attack.py ----
def register_attack(name=None, category=None):
    def wrapper(attack_cls):
        attack_cls.attack_name = name if name else attack_cls.__name__
        return attack_cls

    return wrapper


class Attack(ABC):
    """The base class for all attacks."""

    attack_name: str

    def __init__(
        self,
        model: nn.Module | AttackModel | None,
        normalize: Callable[[torch.Tensor], torch.Tensor] | None,
        device: torch.device | None,
    ) -> None:
        super().__init__()

        self.model = (
            # If model is an AttackModel, use the model attribute
            model.model
            if isinstance(model, AttackModel)
            # If model is a nn.Module, use the model itself
            else model
            if model is not None
            # Otherwise, use an empty nn.Sequential acting as a dummy model
            else nn.Sequential()
        )

        # Set device to given or defaults to cuda if available
        is_cuda = torch.cuda.is_available()
        self.device = device if device else torch.device('cuda' if is_cuda else 'cpu')

        # If normalize is None, use identity function
        self.normalize = normalize if normalize else lambda x: x

    @abstractmethod
    def forward(self, *args: Any, **kwds: Any) -> Any:
        pass

    def __call__(self, *args: Any, **kwds: Any) -> Any:
        return self.forward(*args, **kwds)


# ---- torchattack/mifgsm.py ----
@register_attack()
class MIFGSM(Attack):
    """The MI-FGSM (Momentum Iterative FGSM) attack.

    > From the paper: [Boosting Adversarial Attacks with Momentum](https://arxiv.org/abs/1710.06081).

    Args:
        model: The model to attack.
        normalize: A transform to normalize images.
        device: Device to use for tensors. Defaults to cuda if available.
        eps: The maximum perturbation. Defaults to 8/255.
        steps: Number of steps. Defaults to 10.
        alpha: Step size, `eps / steps` if None. Defaults to None.
        decay: Decay factor for the momentum term. Defaults to 1.0.
        clip_min: Minimum value for clipping. Defaults to 0.0.
        clip_max: Maximum value for clipping. Defaults to 1.0.
        targeted: Targeted attack if True. Defaults to False.
    """

    def __init__(
        self,
        model: nn.Module | AttackModel,
        normalize: Callable[[torch.Tensor], torch.Tensor] | None = None,
        device: torch.device | None = None,
        eps: float = 8 / 255,
        steps: int = 10,
        alpha: float | None = None,
        decay: float = 1.0,
        clip_min: float = 0.0,
        clip_max: float = 1.0,
        targeted: bool = False,
    ) -> None:
        super().__init__(model, normalize, device)

        self.eps = eps
        self.steps = steps
        self.alpha = alpha
        self.decay = decay
        self.clip_min = clip_min
        self.clip_max = clip_max
        self.targeted = targeted
        self.lossfn = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Perform MI-FGSM on a batch of images.

        Args:
            x: A batch of images. Shape: (N, C, H, W).
            y: A batch of labels. Shape: (N).

        Returns:
            The perturbed images if successful. Shape: (N, C, H, W).
        """

        g = torch.zeros_like(x)
        delta = torch.zeros_like(x, requires_grad=True)

        # If alpha is not given, set to eps / steps
        if self.alpha is None:
            self.alpha = self.eps / self.steps

        # Perform MI-FGSM
        for _ in range(self.steps):
            # Compute loss
            outs = self.model(self.normalize(x + delta))
            loss = self.lossfn(outs, y)

            if self.targeted:
                loss = -loss

            # Compute gradient
            loss.backward()

            if delta.grad is None:
                continue

            # Apply momentum term
            g = self.decay * g + delta.grad / torch.mean(
                torch.abs(delta.grad), dim=(1, 2, 3), keepdim=True
            )

            # Update delta
            delta.data = delta.data + self.alpha * g.sign()
            delta.data = torch.clamp(delta.data, -self.eps, self.eps)
            delta.data = torch.clamp(x + delta.data, self.clip_min, self.clip_max) - x

            # Zero out gradient
            delta.grad.detach_()
            delta.grad.zero_()

        return x + delta



if __name__ == '__main__':
    # a small classifier and a random batch in place of resnet18 and the NIPS 2017 images
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 10),
    ).eval()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    normalize = lambda x: (x - mean) / std

    attack = MIFGSM(AttackModel(model), normalize, device=torch.device('cpu'), eps=8 / 255, steps=3)
    x = torch.rand(4, 3, 16, 16)
    y = torch.randint(0, 10, (4,))
    x_adv = attack(x, y)
    print((x_adv - x).abs().max().item(), (model(normalize(x_adv)).argmax(1) != y).float().mean().item())
