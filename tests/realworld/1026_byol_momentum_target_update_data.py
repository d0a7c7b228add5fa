"""BYOL (yaox12): BYOLModel.forward computes the online prediction, then, under `torch.no_grad()`, updates the target network through `.data` (`param_k.data.mul_(mm).add_(1. - mm, param_q.data)`) before running it; the trainer steps the online network and predictor; a few steps on random two-view batches."""
# outcome: ok
# source: https://github.com/yaox12/BYOL-PyTorch/blob/master/model/byol_model.py
# repo: yaox12/BYOL-PyTorch
# category: residual
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- stand-in for torchvision.models (not installed here): a tiny resnet-shaped backbone, random weights ----
class _TinyResNet(nn.Module):
    def __init__(self, pretrained=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)


class models:
    resnet18 = _TinyResNet


# ---- model/basic_modules.py ----
class MLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()

        self.l1 = nn.Linear(input_dim, hidden_dim)
        self.bn1 = nn.BatchNorm1d(hidden_dim)
        self.relu1 = nn.ReLU(inplace=True)
        self.l2 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        x = self.l1(x)
        x = self.bn1(x)
        x = self.relu1(x)
        x = self.l2(x)
        return x

class EncoderwithProjection(nn.Module):
    def __init__(self, config):
        super().__init__()
        # backbone
        pretrained = config['model']['backbone']['pretrained']
        net_name = config['model']['backbone']['type']
        base_encoder = models.__dict__[net_name](pretrained=pretrained)
        self.encoder = nn.Sequential(*list(base_encoder.children())[:-1])

        # projection
        input_dim = config['model']['projection']['input_dim']
        hidden_dim = config['model']['projection']['hidden_dim']
        output_dim = config['model']['projection']['output_dim']
        self.projetion = MLP(input_dim=input_dim, hidden_dim=hidden_dim, output_dim=output_dim)

    def forward(self, x):
        x = self.encoder(x)
        x = torch.flatten(x, 1)
        x = self.projetion(x)
        return x

class Predictor(nn.Module):
    def __init__(self, config):
        super().__init__()

        # predictor
        input_dim = config['model']['predictor']['input_dim']
        hidden_dim = config['model']['predictor']['hidden_dim']
        output_dim = config['model']['predictor']['output_dim']
        self.predictor = MLP(input_dim=input_dim, hidden_dim=hidden_dim, output_dim=output_dim)

    def forward(self, x):
        return self.predictor(x)


# ---- model/byol_model.py ----
class BYOLModel(torch.nn.Module):
    def __init__(self, config):
        super().__init__()

        # online network
        self.online_network = EncoderwithProjection(config)

        # target network
        self.target_network = EncoderwithProjection(config)

        # predictor
        self.predictor = Predictor(config)

        self._initializes_target_network()

    @torch.no_grad()
    def _initializes_target_network(self):
        for param_q, param_k in zip(self.online_network.parameters(), self.target_network.parameters()):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False     # not update by gradient

    @torch.no_grad()
    def _update_target_network(self, mm):
        """Momentum update of target network"""
        for param_q, param_k in zip(self.online_network.parameters(), self.target_network.parameters()):
            param_k.data.mul_(mm).add_(1. - mm, param_q.data)

    def forward(self, view1, view2, mm):
        # online network forward
        q = self.predictor(self.online_network(torch.cat([view1, view2], dim=0)))

        # target network forward
        with torch.no_grad():
            self._update_target_network(mm)
            target_z = self.target_network(torch.cat([view2, view1], dim=0)).detach().clone()

        return q, target_z


# ---- trainer/byol_trainer.py (BYOLTrainer cut to construct_model / adjust_mm / forward_loss / train_epoch; SGD for LARS, no apex, no logging) ----
class BYOLTrainer():
    def __init__(self, config):
        self.config = config
        self.total_epochs = self.config['optimizer']['total_epochs']
        self.train_batch_size = self.config['data']['train_batch_size']
        self.num_examples = self.config['data']['num_examples']
        self.total_steps = self.total_epochs * self.num_examples // self.train_batch_size
        self.max_lr = self.config['optimizer']['base_lr'] / 256 * self.train_batch_size
        self.base_mm = self.config['model']['base_momentum']
        self.device = torch.device('cpu')
        self.steps = 0
        self.construct_model()

    def construct_model(self):
        net = BYOLModel(self.config)
        self.model = net.to(self.device)
        momentum = self.config['optimizer']['momentum']
        weight_decay = self.config['optimizer']['weight_decay']
        params = list(self.model.online_network.parameters()) + list(self.model.predictor.parameters())
        self.optimizer = torch.optim.SGD(params, lr=self.max_lr, momentum=momentum, weight_decay=weight_decay)

    def adjust_mm(self, step):
        self.mm = 1 - (1 - self.base_mm) * (np.cos(np.pi * step / self.total_steps) + 1) / 2

    def forward_loss(self, preds, targets):
        bz = preds.size(0)
        preds_norm = F.normalize(preds, dim=1)
        targets_norm = F.normalize(targets, dim=1)
        loss = 2 - 2 * (preds_norm * targets_norm).sum() / bz
        return loss

    def train_epoch(self, epoch, loader, printer=print):
        self.model.train()
        for images in loader:
            self.adjust_mm(self.steps)
            self.steps += 1

            assert images.dim() == 5, f"Input must have 5 dims, got: {images.dim()}"
            view1 = images[:, 0, ...].contiguous()
            view2 = images[:, 1, ...].contiguous()

            # forward
            q, target_z = self.model(view1, view2, self.mm)

            loss = self.forward_loss(q, target_z)

            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            printer(f'Epoch: [{epoch}] Step {self.steps}\tmm {round(self.mm, 5)}\tLoss {loss.item():.4f}')


if __name__ == "__main__":
    config = {
        'model': {'backbone': {'type': 'resnet18', 'pretrained': False},
                  'projection': {'input_dim': 16, 'hidden_dim': 32, 'output_dim': 8},
                  'predictor': {'input_dim': 8, 'hidden_dim': 32, 'output_dim': 8},
                  'base_momentum': 0.996},
        'optimizer': {'total_epochs': 1, 'base_lr': 0.3, 'momentum': 0.9, 'weight_decay': 1e-6},
        'data': {'train_batch_size': 4, 'num_examples': 12},
    }
    trainer = BYOLTrainer(config)
    loader = [torch.randn(4, 2, 3, 8, 8) for _ in range(3)]
    trainer.train_epoch(0, loader)
