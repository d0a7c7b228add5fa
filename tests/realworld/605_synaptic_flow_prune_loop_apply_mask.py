"""Synaptic-Flow's singleshot experiment: pre-train a masked MLP, then prune_loop (`pruner.apply_mask()` does `param.mul_(mask)` under @torch.no_grad(); SNIP turns `m.requires_grad = True` on the mask buffers and back; SynFlow's linearize/nonlinearize run `param.abs_()` / `param.mul_(signs)` on the state_dict), then fine-tune with the masks folded into each forward."""
# outcome: ok
# source: https://github.com/ganguli-lab/Synaptic-Flow/blob/master/Experiments/singleshot.py
# repo: ganguli-lab/Synaptic-Flow
# category: leaf
import os
import tempfile
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
from tqdm import tqdm


# ---- Layers/layers.py (the layers the MLP uses) ----
class layers:
    class Linear(nn.Linear):
        def __init__(self, in_features, out_features, bias=True):
            super(layers.Linear, self).__init__(in_features, out_features, bias)
            self.register_buffer('weight_mask', torch.ones(self.weight.shape))
            if self.bias is not None:
                self.register_buffer('bias_mask', torch.ones(self.bias.shape))

        def forward(self, input):
            W = self.weight_mask * self.weight
            if self.bias is not None:
                b = self.bias_mask * self.bias
            else:
                b = self.bias
            return F.linear(input, W, b)

    class Identity1d(nn.Module):
        pass

    class Identity2d(nn.Module):
        pass

    class BatchNorm1d(nn.BatchNorm1d):
        pass

    class BatchNorm2d(nn.BatchNorm2d):
        pass

    class Conv2d(nn.Conv2d):
        pass


# ---- Models/mlp.py ----
def fc(input_shape, num_classes, dense_classifier=False, pretrained=False, L=6, N=100, nonlinearity=nn.ReLU()):
  size = np.prod(input_shape)

  # Linear feature extractor
  modules = [nn.Flatten()]
  modules.append(layers.Linear(size, N))
  modules.append(nonlinearity)
  for i in range(L-2):
    modules.append(layers.Linear(N,N))
    modules.append(nonlinearity)

  # Linear classifier
  if dense_classifier:
    modules.append(nn.Linear(N, num_classes))
  else:
    modules.append(layers.Linear(N, num_classes))
  model = nn.Sequential(*modules)

  # Pretrained model
  if pretrained:
    print("WARNING: this model does not have pretrained weights.")

  return model


# ---- Utils/generator.py ----
class generator:
    @staticmethod
    def masks(module):
        for name, buf in module.named_buffers():
            if "mask" in name:
                yield buf

    @staticmethod
    def trainable(module):
        return not isinstance(module, (layers.Identity1d, layers.Identity2d))

    @staticmethod
    def prunable(module, batchnorm, residual):
        isprunable = isinstance(module, (layers.Linear, layers.Conv2d))
        if batchnorm:
            isprunable |= isinstance(module, (layers.BatchNorm1d, layers.BatchNorm2d))
        if residual:
            isprunable |= isinstance(module, (layers.Identity1d, layers.Identity2d))
        return isprunable

    @staticmethod
    def parameters(model):
        for module in filter(lambda p: generator.trainable(p), model.modules()):
            for param in module.parameters():
                yield param

    @staticmethod
    def masked_parameters(model, bias=False, batchnorm=False, residual=False):
        for module in filter(lambda p: generator.prunable(p, batchnorm, residual), model.modules()):
            for mask, param in zip(generator.masks(module), module.parameters()):
                if param is not module.bias or bias is True:
                    yield mask, param


# ---- Pruners/pruners.py ----
class Pruner:
    def __init__(self, masked_parameters):
        self.masked_parameters = list(masked_parameters)
        self.scores = {}

    def score(self, model, loss, dataloader, device):
        raise NotImplementedError

    def _global_mask(self, sparsity):
        global_scores = torch.cat([torch.flatten(v) for v in self.scores.values()])
        k = int((1.0 - sparsity) * global_scores.numel())
        if not k < 1:
            threshold, _ = torch.kthvalue(global_scores, k)
            for mask, param in self.masked_parameters:
                score = self.scores[id(param)]
                zero = torch.tensor([0.]).to(mask.device)
                one = torch.tensor([1.]).to(mask.device)
                mask.copy_(torch.where(score <= threshold, zero, one))

    def _local_mask(self, sparsity):
        for mask, param in self.masked_parameters:
            score = self.scores[id(param)]
            k = int((1.0 - sparsity) * score.numel())
            if not k < 1:
                threshold, _ = torch.kthvalue(torch.flatten(score), k)
                zero = torch.tensor([0.]).to(mask.device)
                one = torch.tensor([1.]).to(mask.device)
                mask.copy_(torch.where(score <= threshold, zero, one))

    def mask(self, sparsity, scope):
        if scope == 'global':
            self._global_mask(sparsity)
        if scope == 'local':
            self._local_mask(sparsity)

    @torch.no_grad()
    def apply_mask(self):
        r"""Applies mask to prunable parameters.
        """
        for mask, param in self.masked_parameters:
            param.mul_(mask)

    def stats(self):
        remaining_params, total_params = 0, 0
        for mask, _ in self.masked_parameters:
             remaining_params += mask.detach().cpu().numpy().sum()
             total_params += mask.numel()
        return remaining_params, total_params


class SNIP(Pruner):
    def __init__(self, masked_parameters):
        super(SNIP, self).__init__(masked_parameters)

    def score(self, model, loss, dataloader, device):

        # allow masks to have gradient
        for m, _ in self.masked_parameters:
            m.requires_grad = True

        # compute gradient
        for batch_idx, (data, target) in enumerate(dataloader):
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss(output, target).backward()

        # calculate score |g * theta|
        for m, p in self.masked_parameters:
            self.scores[id(p)] = torch.clone(m.grad).detach().abs_()
            p.grad.data.zero_()
            m.grad.data.zero_()
            m.requires_grad = False

        # normalize score
        all_scores = torch.cat([torch.flatten(v) for v in self.scores.values()])
        norm = torch.sum(all_scores)
        for _, p in self.masked_parameters:
            self.scores[id(p)].div_(norm)


class SynFlow(Pruner):
    def __init__(self, masked_parameters):
        super(SynFlow, self).__init__(masked_parameters)

    def score(self, model, loss, dataloader, device):

        @torch.no_grad()
        def linearize(model):
            # model.double()
            signs = {}
            for name, param in model.state_dict().items():
                signs[name] = torch.sign(param)
                param.abs_()
            return signs

        @torch.no_grad()
        def nonlinearize(model, signs):
            # model.float()
            for name, param in model.state_dict().items():
                param.mul_(signs[name])

        signs = linearize(model)

        (data, _) = next(iter(dataloader))
        input_dim = list(data[0,:].shape)
        input = torch.ones([1] + input_dim).to(device)#, dtype=torch.float64).to(device)
        output = model(input)
        torch.sum(output).backward()

        for _, p in self.masked_parameters:
            self.scores[id(p)] = torch.clone(p.grad * p).detach().abs_()
            p.grad.data.zero_()

        nonlinearize(model, signs)


# ---- prune.py ----
def prune_loop(model, loss, pruner, dataloader, device, sparsity,
               schedule, scope, epochs, reinitialize=False):
    model.eval()
    for epoch in tqdm(range(epochs)):
        pruner.apply_mask()
        pruner.score(model, loss, dataloader, device)
        if schedule == 'exponential':
            sparse = sparsity**((epoch + 1) / epochs)
        elif schedule == 'linear':
            sparse = 1.0 - (1.0 - sparsity)*((epoch + 1) / epochs)
        pruner.mask(sparse, scope)
    if reinitialize:
        model._initialize_weights()

    # Confirm sparsity level
    remaining_params, total_params = pruner.stats()
    if np.abs(remaining_params - total_params*sparsity) >= 1:
        print("ERROR: {} prunable parameters remaining, expected {}".format(remaining_params, total_params*sparsity))


# ---- train.py (rows returned as a list instead of a DataFrame) ----
def train(model, loss, optimizer, dataloader, device, epoch, verbose, log_interval=10):
    model.train()
    total = 0
    for batch_idx, (data, target) in enumerate(dataloader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        train_loss = loss(output, target)
        total += train_loss.item() * data.size(0)
        train_loss.backward()
        optimizer.step()
    return total / len(dataloader.dataset)


def eval(model, loss, dataloader, device, verbose):
    model.eval()
    total = 0
    correct1 = 0
    correct5 = 0
    with torch.no_grad():
        for data, target in dataloader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            total += loss(output, target).item() * data.size(0)
            _, pred = output.topk(5, dim=1)
            correct = pred.eq(target.view(-1, 1).expand_as(pred))
            correct1 += correct[:,:1].sum().item()
            correct5 += correct[:,:5].sum().item()
    average_loss = total / len(dataloader.dataset)
    accuracy1 = 100. * correct1 / len(dataloader.dataset)
    accuracy5 = 100. * correct5 / len(dataloader.dataset)
    return average_loss, accuracy1, accuracy5


def train_eval_loop(model, loss, optimizer, scheduler, train_loader, test_loader, device, epochs, verbose):
    test_loss, accuracy1, accuracy5 = eval(model, loss, test_loader, device, verbose)
    rows = [[np.nan, test_loss, accuracy1, accuracy5]]
    for epoch in tqdm(range(epochs)):
        train_loss = train(model, loss, optimizer, train_loader, device, epoch, verbose)
        test_loss, accuracy1, accuracy5 = eval(model, loss, test_loader, device, verbose)
        row = [train_loss, test_loss, accuracy1, accuracy5]
        scheduler.step()
        rows.append(row)
    return rows


# ---- Experiments/singleshot.py ----
def run(args):
    torch.manual_seed(args.seed)
    device = torch.device("cpu")

    # random 1x8x8 images, 10 classes, instead of MNIST
    input_shape, num_classes = (1, 8, 8), 10
    dataset = torch.utils.data.TensorDataset(torch.randn(32, *input_shape), torch.randint(0, num_classes, (32,)))
    prune_loader = torch.utils.data.DataLoader(dataset, batch_size=args.prune_batch_size, shuffle=True)
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=args.train_batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(dataset, batch_size=args.test_batch_size, shuffle=False)

    model = fc(input_shape, num_classes, args.dense_classifier, args.pretrained, L=4, N=32).to(device)
    loss = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(generator.parameters(model), lr=args.lr, weight_decay=args.weight_decay, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=args.lr_drops, gamma=args.lr_drop_rate)

    ## Pre-Train ##
    pre_result = train_eval_loop(model, loss, optimizer, scheduler, train_loader,
                                 test_loader, device, args.pre_epochs, args.verbose)

    ## Save Original ##
    torch.save(model.state_dict(),"{}/model.pt".format(args.result_dir))
    torch.save(optimizer.state_dict(),"{}/optimizer.pt".format(args.result_dir))
    torch.save(scheduler.state_dict(),"{}/scheduler.pt".format(args.result_dir))

    ## Prune and Fine-Tune##
    for compression in args.compression_list:
        for p, p_epochs in zip(args.pruner_list, args.prune_epoch_list):
            print('{} compression ratio, {} pruners'.format(compression, p))

            # Reset Model, Optimizer, and Scheduler
            model.load_state_dict(torch.load("{}/model.pt".format(args.result_dir), map_location=device))
            optimizer.load_state_dict(torch.load("{}/optimizer.pt".format(args.result_dir), map_location=device))
            scheduler.load_state_dict(torch.load("{}/scheduler.pt".format(args.result_dir), map_location=device))

            # Prune Model
            pruner = {'snip': SNIP, 'synflow': SynFlow}[p](generator.masked_parameters(model, args.prune_bias, args.prune_batchnorm, args.prune_residual))
            sparsity = 10**(-float(compression))
            prune_loop(model, loss, pruner, prune_loader, device, sparsity,
                       args.compression_schedule, args.mask_scope, p_epochs, args.reinitialize)

            # Train Model
            post_result = train_eval_loop(model, loss, optimizer, scheduler, train_loader,
                                          test_loader, device, args.post_epochs, args.verbose)
            print(p, compression, post_result[-1])


if __name__ == '__main__':
    result_dir = tempfile.mkdtemp()
    args = SimpleNamespace(
        seed=1, prune_batch_size=16, train_batch_size=16, test_batch_size=16,
        dense_classifier=False, pretrained=False, lr=0.01, weight_decay=1e-4,
        lr_drops=[], lr_drop_rate=0.1, pre_epochs=1, post_epochs=1, verbose=False,
        result_dir=result_dir, compression_list=[0.5], pruner_list=['snip', 'synflow'],
        prune_epoch_list=[1, 2], prune_bias=False, prune_batchnorm=False, prune_residual=False,
        compression_schedule='exponential', mask_scope='global', reinitialize=False,
    )
    run(args)
