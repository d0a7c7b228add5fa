"""torchattacks PGD: each step sets requires_grad on the adversarial images, takes autograd.grad of the loss, then rebinds them to a detached sign step clamped into the eps ball (no in-place write on the leaf); the attack feeds an adversarial training step."""
# outcome: ok
# source: https://github.com/Harry24k/adversarial-attacks-pytorch/blob/master/torchattacks/attacks/pgd.py
# repo: Harry24k/adversarial-attacks-pytorch
# category: leaf
import torch
import torch.nn as nn


# torchattacks/attack.py (the parts PGD uses)
class clamp_methods:
    @staticmethod
    def clamp_0_1(images, adv_images):
        return torch.clamp(adv_images, min=0, max=1)


class Attack(object):
    def __init__(self, name, model):
        self.attack = name
        self.model = model
        self.device = next(model.parameters()).device
        self._targeted = False
        self._supported_mode = ['default']

    def _get_target_label(self, images, labels):
        return (labels + 1) % 10

    def __call__(self, *input, **kwargs):
        given_training = self.model.training
        self.model.eval()
        images = self.forward(*input, **kwargs)
        if given_training:
            self.model.train()
        return images


# torchattacks/attacks/pgd.py
class PGD(Attack):
    def __init__(self, model, eps=0.3, alpha=2/255, steps=40, random_start=True,
                 clamp_function=clamp_methods.clamp_0_1):
        super().__init__("PGD", model)
        self.eps = eps
        self.alpha = alpha
        self.steps = steps
        self.random_start = random_start
        self._supported_mode = ['default', 'targeted']
        self.clamp_function = clamp_function

    def forward(self, images, labels):
        r"""
        Overridden.
        """
        images = images.clone().detach().to(self.device)
        labels = labels.clone().detach().to(self.device)

        if self._targeted:
            target_labels = self._get_target_label(images, labels)

        loss = nn.CrossEntropyLoss()

        adv_images = images.clone().detach()

        if self.random_start:
            # Starting at a uniformly random point
            adv_images = adv_images + torch.empty_like(adv_images).uniform_(-self.eps, self.eps)
            adv_images = torch.clamp(adv_images, min=0, max=1).detach()

        for _ in range(self.steps):
            adv_images.requires_grad = True
            outputs = self.model(adv_images)

            # Calculate loss
            if self._targeted:
                cost = -loss(outputs, target_labels)
            else:
                cost = loss(outputs, labels)

            # Update adversarial images
            grad = torch.autograd.grad(cost, adv_images,
                                       retain_graph=False, create_graph=False)[0]

            adv_images = adv_images.detach() + self.alpha*grad.sign()
            delta = torch.clamp(adv_images - images, min=-self.eps, max=self.eps)
            adv_images = self.clamp_function(images, images + delta).detach()

        return adv_images


# demo: adversarial training of a small CNN with the attack
class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.layer = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(4 * 4 * 4, 10))

    def forward(self, x):
        return self.layer(x)


if __name__ == '__main__':
    model = CNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    attack = PGD(model, eps=0.3, alpha=0.1, steps=3, random_start=True)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for step in range(3):
        images = torch.rand(4, 1, 8, 8)
        labels = torch.randint(0, 10, (4,))
        adv_images = attack(images, labels)
        cost = loss_fn(model(adv_images), labels)
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        print(step, cost.item())
