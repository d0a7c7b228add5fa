"""self-ensemble-visual-domain-adapt (Britefury) mean teacher: after loss_expr.backward() and student_optimizer.step(), the teacher's EMA step (OldWeightEMA, the command-line default) writes p.data.mul_ / add_ into the teacher's parameters (requires_grad=False); the teacher's predictions feed the unsupervised loss without a detach."""
# outcome: ok
# source: https://github.com/Britefury/self-ensemble-visual-domain-adapt/blob/master/experiment_domainadapt_meanteacher.py
# repo: Britefury/self-ensemble-visual-domain-adapt
# category: trainer
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


# ---- optim_weight_ema.py ----


class OldWeightEMA (object):
    """
    Exponential moving average weight optimizer for mean teacher model
    """
    def __init__(self, target_net, source_net, alpha=0.999):
        self.target_params = list(target_net.parameters())
        self.source_params = list(source_net.parameters())
        self.alpha = alpha

        for p, src_p in zip(self.target_params, self.source_params):
            p.data[:] = src_p.data[:]

    def step(self):
        one_minus_alpha = 1.0 - self.alpha
        for p, src_p in zip(self.target_params, self.source_params):
            p.data.mul_(self.alpha)
            p.data.add_(src_p.data * one_minus_alpha)



class EMAWeightOptimizer (object):
    def __init__(self, target_net, source_net, alpha=0.999):
        self.target_net = target_net
        self.source_net = source_net
        self.ema_alpha = alpha
        self.target_params = list(target_net.state_dict().values())
        self.source_params = list(source_net.state_dict().values())

        for tgt_p, src_p in zip(self.target_params, self.source_params):
            tgt_p[:] = src_p[:]

        target_keys = set(target_net.state_dict().keys())
        source_keys = set(source_net.state_dict().keys())
        if target_keys != source_keys:
            raise ValueError('Source and target networks do not have the same state dict keys; do they have different architectures?')


    def step(self):
        one_minus_alpha = 1.0 - self.ema_alpha
        for tgt_p, src_p in zip(self.target_params, self.source_params):
            tgt_p.mul_(self.ema_alpha)
            tgt_p.add_(src_p * one_minus_alpha)

class optim_weight_ema:
    OldWeightEMA = OldWeightEMA
    EMAWeightOptimizer = EMAWeightOptimizer


# ---- network_architectures.py (the MNIST architecture and the loss helpers) ----
_ARCH_REGISTRY = {}


def architecture(name, sample_shape):
    """
    Decorator to register an architecture;

    Use like so:

    >>> @architecture('my_architecture', (3, 32, 32))
    ... class MyNetwork(nn.Module):
    ...     def __init__(self, n_classes):
    ...         # Build network
    ...         pass
    """
    def decorate(fn):
        _ARCH_REGISTRY[name] = (fn, sample_shape)
        return fn
    return decorate


def get_net_and_shape_for_architecture(arch_name):
    """
    Get network building function and expected sample shape:

    For example:
    >>> net_class, shape = get_net_and_shape_for_architecture('my_architecture')

    >>> if shape != expected_shape:
    ...     raise Exception('Incorrect shape')
    """
    return _ARCH_REGISTRY[arch_name]



@architecture('mnist-bn-32-64-256', (1, 28, 28))
class MNIST_BN_32_64_256 (nn.Module):
    def __init__(self, n_classes):
        super(MNIST_BN_32_64_256, self).__init__()

        self.conv1_1 = nn.Conv2d(1, 32, (5, 5))
        self.conv1_1_bn = nn.BatchNorm2d(32)
        self.pool1 = nn.MaxPool2d((2, 2))

        self.conv2_1 = nn.Conv2d(32, 64, (3, 3))
        self.conv2_1_bn = nn.BatchNorm2d(64)
        self.conv2_2 = nn.Conv2d(64, 64, (3, 3))
        self.conv2_2_bn = nn.BatchNorm2d(64)
        self.pool2 = nn.MaxPool2d((2, 2))

        self.drop1 = nn.Dropout()
        self.fc3 = nn.Linear(1024, 256)
        self.fc4 = nn.Linear(256, n_classes)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1_1_bn(self.conv1_1(x))))

        x = F.relu(self.conv2_1_bn(self.conv2_1(x)))
        x = self.pool2(F.relu(self.conv2_2_bn(self.conv2_2(x))))
        x = x.view(-1, 1024)
        x = self.drop1(x)
        x = F.relu(self.fc3(x))
        x = self.fc4(x)
        return x


def robust_binary_crossentropy(pred, tgt):
    inv_tgt = -tgt + 1.0
    inv_pred = -pred + 1.0 + 1e-6
    return -(tgt * torch.log(pred + 1.0e-6) + inv_tgt * torch.log(inv_pred))

def bugged_cls_bal_bce(pred, tgt):
    inv_tgt = -tgt + 1.0
    inv_pred = pred + 1.0 + 1e-6
    return -(tgt * torch.log(pred + 1.0e-6) + inv_tgt * torch.log(inv_pred))

def log_cls_bal(pred, tgt):
    return -torch.log(pred + 1.0e-6)

def get_cls_bal_function(name):
    if name == 'bce':
        return robust_binary_crossentropy
    elif name == 'log':
        return log_cls_bal
    elif name == 'bug':
        return bugged_cls_bal_bce


class network_architectures:
    robust_binary_crossentropy = staticmethod(robust_binary_crossentropy)
    get_cls_bal_function = staticmethod(get_cls_bal_function)


# ---- experiment_domainadapt_meanteacher.py: experiment(), the network / optimizer / loss / f_train part, with
# the command-line defaults (no --fix_ema, var loss, no ramp-up, separate batches), MNIST-sized random batches and a
# stand-in for augmentation.ImageAugmentation (gaussian noise only) ----
def experiment(loss='var', double_softmax=False, confidence_thresh=0.96837722, rampup=0, teacher_alpha=0.99,
               fix_ema=False, unsup_weight=3.0, cls_bal_scale=False, cls_bal_scale_range=0.0, cls_balance=0.005,
               cls_balance_loss='bce', learning_rate=0.001, num_steps=3, batch_size=8):
    torch_device = torch.device('cpu')
    use_rampup = rampup > 0
    n_classes = 10
    net_class, expected_shape = get_net_and_shape_for_architecture('mnist-bn-32-64-256')

    student_net = net_class(n_classes).to(torch_device)
    teacher_net = net_class(n_classes).to(torch_device)
    student_params = list(student_net.parameters())
    teacher_params = list(teacher_net.parameters())
    for param in teacher_params:
        param.requires_grad = False

    student_optimizer = torch.optim.Adam(student_params, lr=learning_rate)
    if fix_ema:
        teacher_optimizer = optim_weight_ema.EMAWeightOptimizer(teacher_net, student_net, alpha=teacher_alpha)
    else:
        teacher_optimizer = optim_weight_ema.OldWeightEMA(teacher_net, student_net, alpha=teacher_alpha)
    classification_criterion = nn.CrossEntropyLoss()
    rampup_weight_in_list = [0]


    cls_bal_fn = network_architectures.get_cls_bal_function(cls_balance_loss)


    def compute_aug_loss(stu_out, tea_out):
        # Augmentation loss
        if use_rampup:
            unsup_mask = None
            conf_mask_count = None
            unsup_mask_count = None
        else:
            conf_tea = torch.max(tea_out, 1)[0]
            unsup_mask = conf_mask = (conf_tea > confidence_thresh).float()
            unsup_mask_count = conf_mask_count = conf_mask.sum()

        if loss == 'bce':
            aug_loss = network_architectures.robust_binary_crossentropy(stu_out, tea_out)
        else:
            d_aug_loss = stu_out - tea_out
            aug_loss = d_aug_loss * d_aug_loss

        # Class balance scaling
        if cls_bal_scale:
            if use_rampup:
                n_samples = float(aug_loss.shape[0])
            else:
                n_samples = unsup_mask.sum()
            avg_pred = n_samples / float(n_classes)
            bal_scale = avg_pred / torch.clamp(tea_out.sum(dim=0), min=1.0)
            if cls_bal_scale_range != 0.0:
                bal_scale = torch.clamp(bal_scale, min=1.0/cls_bal_scale_range, max=cls_bal_scale_range)
            bal_scale = bal_scale.detach()
            aug_loss = aug_loss * bal_scale[None, :]

        aug_loss = aug_loss.mean(dim=1)

        if use_rampup:
            unsup_loss = aug_loss.mean() * rampup_weight_in_list[0]
        else:
            unsup_loss = (aug_loss * unsup_mask).mean()

        # Class balance loss
        if cls_balance > 0.0:
            # Compute per-sample average predicated probability
            # Average over samples to get average class prediction
            avg_cls_prob = stu_out.mean(dim=0)
            # Compute loss
            equalise_cls_loss = cls_bal_fn(avg_cls_prob, float(1.0 / n_classes))

            equalise_cls_loss = equalise_cls_loss.mean() * n_classes

            if use_rampup:
                equalise_cls_loss = equalise_cls_loss * rampup_weight_in_list[0]
            else:
                if rampup == 0:
                    equalise_cls_loss = equalise_cls_loss * unsup_mask.mean(dim=0)

            unsup_loss += equalise_cls_loss * cls_balance

        return unsup_loss, conf_mask_count, unsup_mask_count

    def f_train(X_src, y_src, X_tgt0, X_tgt1):
        X_src = torch.tensor(X_src, dtype=torch.float, device=torch_device)
        y_src = torch.tensor(y_src, dtype=torch.long, device=torch_device)
        X_tgt0 = torch.tensor(X_tgt0, dtype=torch.float, device=torch_device)
        X_tgt1 = torch.tensor(X_tgt1, dtype=torch.float, device=torch_device)

        student_optimizer.zero_grad()
        student_net.train()
        teacher_net.train()

        src_logits_out = student_net(X_src)
        student_tgt_logits_out = student_net(X_tgt0)
        student_tgt_prob_out = F.softmax(student_tgt_logits_out, dim=1)
        teacher_tgt_logits_out = teacher_net(X_tgt1)
        teacher_tgt_prob_out = F.softmax(teacher_tgt_logits_out, dim=1)

        # Supervised classification loss
        if double_softmax:
            clf_loss = classification_criterion(F.softmax(src_logits_out, dim=1), y_src)
        else:
            clf_loss = classification_criterion(src_logits_out, y_src)

        unsup_loss, conf_mask_count, unsup_mask_count = compute_aug_loss(student_tgt_prob_out, teacher_tgt_prob_out)

        loss_expr = clf_loss + unsup_loss * unsup_weight

        loss_expr.backward()
        student_optimizer.step()
        teacher_optimizer.step()

        n_samples = X_src.size()[0]

        outputs = [float(clf_loss) * n_samples, float(unsup_loss) * n_samples]
        if not use_rampup:
            mask_count = float(conf_mask_count)
            unsup_count = float(unsup_mask_count)

            outputs.append(mask_count)
            outputs.append(unsup_count)
        return tuple(outputs)



    def augment_pair(X):
        return (X + np.random.normal(0, 0.1, X.shape).astype(np.float32),
                X + np.random.normal(0, 0.1, X.shape).astype(np.float32))

    for step in range(num_steps):
        X_src = np.random.rand(batch_size, 1, 28, 28).astype(np.float32)
        y_src = np.random.randint(0, n_classes, (batch_size,))
        X_tgt0, X_tgt1 = augment_pair(np.random.rand(batch_size, 1, 28, 28).astype(np.float32))
        print(step, f_train(X_src, y_src, X_tgt0, X_tgt1))


if __name__ == '__main__':
    experiment()
