"""MadryLab robustness: adversarial training with AttackerModel; each PGD iterate is a fresh leaf `x.clone().detach().requires_grad_(True)`, the step and projection run under `ch.no_grad()`, and `replace_best` writes the best iterate / loss in place (`bx[replace] = ...`, `bloss[replace] = loss[replace]`), the last time outside no_grad with a loss that requires grad; a few training steps of a small CNN on random images."""
# outcome: ok
# source: https://github.com/MadryLab/robustness/blob/0e24524d70a851957a7e0bde62e9c235ee521098/robustness/attacker.py
# repo: MadryLab/robustness
# category: leaf
import torch as ch


# ---- robustness/tools/helpers.py ----
class InputNormalize(ch.nn.Module):
    '''
    A module (custom layer) for normalizing the input to have a fixed
    mean and standard deviation (user-specified).
    '''
    def __init__(self, new_mean, new_std):
        super(InputNormalize, self).__init__()
        new_std = new_std[..., None, None]
        new_mean = new_mean[..., None, None]

        self.register_buffer("new_mean", new_mean)
        self.register_buffer("new_std", new_std)

    def forward(self, x):
        x = ch.clamp(x, 0, 1)
        x_normalized = (x - self.new_mean)/self.new_std
        return x_normalized


# ---- robustness/attack_steps.py ----
class AttackerStep:
    def __init__(self, orig_input, eps, step_size,
                instance_attack_function, use_grad=True):
        self.orig_input = orig_input
        self.eps = eps
        self.step_size = step_size
        self.use_grad = use_grad
        self.instance_attack_function = instance_attack_function

    def to_image(self, x):
        return x


# L2 threat model
class L2Step(AttackerStep):
    def project(self, x, target=None, prediction=None):
        diff = x - self.orig_input

        # Allow for per instance eps
        if self.instance_attack_function is None:
            diff = diff.renorm(p=2, dim=0, maxnorm=self.eps)
        else:
            eps_use, _ = self.instance_attack_function(x, target, prediction)
            diff = ch.cat([diff[idx:idx+1].renorm(p=2, dim=0, maxnorm=self.eps * eps_use[idx]) \
                          for idx in range(len(diff))])
        return ch.clamp(self.orig_input + diff, 0, 1)

    def step(self, x, g, target=None, prediction=None):
        # Scale g so that each element of the batch is at least norm 1
        l = len(x.shape) - 1
        g_norm = ch.norm(g.view(g.shape[0], -1), dim=1).view(-1, *([1]*l))
        scaled_g = g / (g_norm + 1e-10)

        if self.instance_attack_function is None:
            return x + scaled_g * self.step_size
        else:
            _, step_use = self.instance_attack_function(x, target, prediction)
            step_size = ch.tensor(self.step_size * step_use)
            step_size = step_size[:, None, None, None].to(scaled_g.device,
                                                          dtype=scaled_g.dtype)
            return x + scaled_g * step_size

    def random_perturb(self, x, target=None, prediction=None):
        if self.instance_attack_function is None:
            new_x = x + (ch.rand_like(x) - 0.5).renorm(p=2, dim=0, maxnorm=self.eps)
        else:
            eps_use, _ = self.instance_attack_function(x, target, prediction)
            rand_x = (ch.rand_like(x) - 0.5)
            rand_x = ch.cat([rand_x[idx:idx+1].renorm(p=2, dim=0, maxnorm=self.eps * eps_use[idx]) \
                          for idx in range(len(rand_x))])
            new_x = x + rand_x
        return ch.clamp(new_x, 0, 1)


STEPS = {
    '2': L2Step,
}


# ---- robustness/attacker.py (`.cuda()` calls dropped: CPU) ----
class Attacker(ch.nn.Module):
    def __init__(self, model, dataset):
        super(Attacker, self).__init__()
        self.normalize = InputNormalize(dataset.mean, dataset.std)
        self.model = model

    def forward(self, x, target, *_, constraint, eps, step_size, iterations,
                random_start=False, random_restarts=False, do_tqdm=False,
                targeted=False, custom_loss=None, should_normalize=True,
                orig_input=None, use_best=True, return_image=True, est_grad=None,
                instance_attack_function=None):
        # Can provide a different input to make the feasible set around
        # instead of the initial point
        if orig_input is None: orig_input = x.detach()

        # Multiplier for gradient ascent [untargeted] or descent [targeted]
        m = -1 if targeted else 1

        # Initialize step class and attacker criterion
        criterion = ch.nn.CrossEntropyLoss(reduction='none')

        step_class = STEPS[constraint] if isinstance(constraint, str) else constraint
        step = step_class(eps=eps, orig_input=orig_input,
                         step_size=step_size, instance_attack_function=instance_attack_function)

        def calc_loss(inp, target):
            '''
            Calculates the loss of an input with respect to target labels
            Uses custom loss (if provided) otherwise the criterion
            '''
            if should_normalize:
                inp = self.normalize(inp)
            output = self.model(inp)
            if custom_loss:
                return custom_loss(self.model, inp, target)

            return criterion(output, target), output

        # Main function for making adversarial examples
        def get_adv_examples(x):
            # Random start (to escape certain types of gradient masking)
            if random_start:
                x = step.random_perturb(x, target=target, prediction=None)

            iterator = range(iterations)

            # Keep track of the "best" (worst-case) loss and its
            # corresponding input
            best_loss = None
            best_x = None

            # A function that updates the best loss and best input
            def replace_best(loss, bloss, x, bx):
                if bloss is None:
                    bx = x.clone().detach()
                    bloss = loss.clone().detach()
                else:
                    replace = m * bloss < m * loss
                    bx[replace] = x[replace].clone().detach()
                    bloss[replace] = loss[replace]

                return bloss, bx

            # PGD iterates
            for _ in iterator:
                x = x.clone().detach().requires_grad_(True)
                losses, out = calc_loss(step.to_image(x), target)
                assert losses.shape[0] == x.shape[0], \
                        'Shape of losses must match input!'

                loss = ch.mean(losses)

                if step.use_grad:
                    grad, = ch.autograd.grad(m * loss, [x])
                else:
                    grad = None

                with ch.no_grad():
                    args = [losses, best_loss, x, best_x]
                    best_loss, best_x = replace_best(*args) if use_best else (losses, x)

                    x = step.step(x, grad, target=target, prediction=out)
                    x = step.project(x, target=target, prediction=out)

            # Save computation (don't compute last loss) if not use_best
            if not use_best:
                ret = x.clone().detach()
                return step.to_image(ret) if return_image else ret

            losses, _ = calc_loss(step.to_image(x), target)
            args = [losses, best_loss, x, best_x]
            best_loss, best_x = replace_best(*args)
            return step.to_image(best_x) if return_image else best_x

        adv_ret = get_adv_examples(x)

        return adv_ret


class AttackerModel(ch.nn.Module):
    def __init__(self, model, dataset):
        super(AttackerModel, self).__init__()
        self.normalizer = InputNormalize(dataset.mean, dataset.std)
        self.model = model
        self.attacker = Attacker(model, dataset)

    def forward(self, inp, target=None, make_adv=False, with_latent=False,
                fake_relu=False, no_relu=False, with_image=True, **attacker_kwargs):
        if make_adv:
            assert target is not None
            prev_training = bool(self.training)
            self.eval()
            adv = self.attacker(inp, target, **attacker_kwargs)
            if prev_training:
                self.train()

            inp = adv

        if with_image:
            normalized_inp = self.normalizer(inp)

            if no_relu and (not with_latent):
                print("WARNING: 'no_relu' has no visible effect if 'with_latent is False.")
            if no_relu and fake_relu:
                raise ValueError("Options 'no_relu' and 'fake_relu' are exclusive")

            output = self.model(normalized_inp, with_latent=with_latent,
                                    fake_relu=fake_relu, no_relu=no_relu)
        else:
            output = None

        return (output, inp)


# ---- a small CIFAR-shaped classifier with the library's forward signature; dataset mean / std ----
class SmallNet(ch.nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = ch.nn.Sequential(ch.nn.Conv2d(3, 8, 3, padding=1), ch.nn.BatchNorm2d(8), ch.nn.ReLU(),
                                         ch.nn.AdaptiveAvgPool2d(1), ch.nn.Flatten())
        self.linear = ch.nn.Linear(8, num_classes)

    def forward(self, x, with_latent=False, fake_relu=False, no_relu=False):
        latent = self.features(x)
        out = self.linear(latent)
        return (out, latent) if with_latent else out


class CIFAR:
    mean = ch.tensor([0.4914, 0.4822, 0.4465])
    std = ch.tensor([0.2023, 0.1994, 0.2010])


if __name__ == "__main__":
    # robustness/train.py _model_loop, shrunk: adversarial training steps on random batches
    model = AttackerModel(SmallNet(), CIFAR)
    opt = ch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    train_criterion = ch.nn.CrossEntropyLoss()
    attack_kwargs = {
        'constraint': '2',
        'eps': 0.5,
        'step_size': 0.1,
        'iterations': 3,
        'random_start': True,
        'random_restarts': False,
        'use_best': True,
    }
    model.train()
    for i in range(3):
        inp, target = ch.rand(4, 3, 8, 8), ch.randint(0, 10, (4,))
        output, final_inp = model(inp, target=target, make_adv=True, **attack_kwargs)
        loss = train_criterion(output, target)
        if len(loss.shape) > 0: loss = loss.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(i, loss.item())
