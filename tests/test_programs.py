"""Small programs whose truth is a torch run: each is run, its outcome must be the label, and
its analysis must give an Error finding on the line marked `# <-` exactly when torch raises;
when it runs, no Error at all and no Warning on that line (a "checked: safe" hint may stand;
`# <-?` allows a Warning, where what the line does rests on an unknown).

Control flow as Python runs it: code after `return`, `raise`, `break` and `continue` never runs,
a `finally` always does, a loop's `else` only without `break`, and a walrus binds. Grad facts as
torch has them: integer and bool tensors never require grad, `requires_grad` toggles, and only
`forward`'s inputs are assumed to require grad.
"""

from __future__ import annotations

import textwrap

import pytest

from inplace_lsp.analysis.engine import analyze
from inplace_lsp.analysis.findings import Severity

try:
    from casefile import outcome_of_error
except ImportError:  # tests/ imported as a package
    from tests.casefile import outcome_of_error

REPORTED = (Severity.ERROR, Severity.WARNING)

HEAD = """\
import torch
import torch.nn as nn

x = torch.randn(3, 4, requires_grad=True)
"""

# (id, program body after HEAD, what torch raises: True / "inplace" for the saved-tensor
# error at backward, "leaf" for an in-place write into a leaf, "refused" for a write torch
# refuses on the spot (IPL009: inference tensor, out=, split output, no_grad view), None /
# False for nothing)
PROGRAMS = [
    (
        "write-after-break",
        """
        def f(x):
            h = torch.sigmoid(x)
            for _ in range(3):
                break
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
    (
        "write-after-continue",
        """
        def f(x):
            h = torch.sigmoid(x)
            for _ in range(3):
                continue
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
    (
        "else-returns-before-the-write",
        """
        def f(x, flag):
            h = torch.sigmoid(x)
            if flag:
                h = h * 2
            else:
                return h
            h += 1  # <-
            return h

        f(x, True).sum().backward()
        f(x, False).sum().backward()
        """,
        False,
    ),
    (
        "write-in-finally-after-return",
        """
        def f(x):
            h = torch.sigmoid(x)
            try:
                return h
            finally:
                h += 1  # <-

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "loop-else-runs-without-break",
        """
        def f(x):
            h = torch.sigmoid(x)
            for v in range(2):
                if v > 5:
                    break
            else:
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "while-true-left-by-break",
        """
        def f(x):
            h = torch.exp(x)
            steps = 0
            while True:
                steps += 1
                if steps > 2:
                    break
            h *= 2  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "handler-runs-after-the-raise",
        """
        def f(x):
            h = torch.tanh(x)
            try:
                raise ValueError("bad batch")
            except ValueError:
                h.mul_(0.5)  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "match-without-wildcard-falls-through",
        """
        def f(x, mode):
            h = torch.sigmoid(x)
            match mode:
                case "skip":
                    return h
            h += 1  # <-
            return h

        f(x, "train").sum().backward()
        """,
        True,
    ),
    (
        "walrus-in-a-while-condition",
        """
        def f(x):
            n = 0
            while n < 1 and (h := torch.sigmoid(x)) is not None:
                n += 1
                h += 1  # <-
            return h

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "guard-raises-before-the-write",
        """
        def f(x):
            h = torch.sigmoid(x)
            if h.sum() > 1e9:
                raise FloatingPointError("overflow")
                h.clamp_(max=1.0)  # <-
            return h

        f(x).sum().backward()
        """,
        False,
    ),
    (
        "copy-into-a-weight-after-requires-grad-false",
        """
        def prune(layer: nn.Linear, index: torch.Tensor) -> nn.Linear:
            w = layer.weight.index_select(0, index).detach().clone()
            new = nn.Linear(layer.in_features, len(index))
            new.weight.requires_grad = False
            new.weight.copy_(w)  # <-
            new.weight.requires_grad = True
            return new

        prune(nn.Linear(4, 3), torch.tensor([0, 2]))(x).sum().backward()
        """,
        None,
    ),
    (
        "copy-into-a-weight-after-requires-grad-back-on",
        """
        def prune(layer: nn.Linear, index: torch.Tensor) -> nn.Linear:
            new = nn.Linear(layer.in_features, len(index))
            new.weight.requires_grad_(False)
            new.weight.requires_grad_(True)
            new.weight.copy_(layer.weight[index])  # <-
            return new

        prune(nn.Linear(4, 3), torch.tensor([0, 2]))
        """,
        "leaf",
    ),
    (
        "token-ids-annotated-long-are-written-after-gather",
        """
        class Shift(nn.Module):
            def forward(self, input_ids: torch.LongTensor, pad: int = 0):
                tokens = input_ids.clone()
                last = (tokens.ne(pad).sum(dim=1) - 1).unsqueeze(-1)
                start = tokens.gather(1, last).squeeze(-1)
                tokens[:, 1:] = tokens[:, :-1].clone()  # <-
                tokens[:, 0] = start
                return tokens

        emb = nn.Embedding(10, 4)
        emb(Shift()(torch.randint(1, 10, (2, 5)))).sum().backward()
        """,
        None,
    ),
    (
        "a-helper-method-s-arguments-are-not-assumed-to-require-grad",
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(20, 4)

            def shift_labels(self, labels: torch.Tensor):
                tokens = labels.clone()
                start = tokens.gather(1, torch.zeros(2, 1, dtype=torch.long))
                tokens[:, 0] = 0  # <-?
                return tokens + start

            def forward(self, ids):
                return self.emb(ids)

        m = Model()
        m(m.shift_labels(torch.randint(1, 10, (2, 5)))).sum().backward()
        """,
        None,
    ),
    (
        "lengths-made-integer-with-long-are-added-to",
        """
        class Pad(nn.Module):
            def forward(self, noise, rel_len):
                noise_len = (rel_len * noise.shape[1]).long()
                min_len = torch.min(noise_len)
                noise = torch.cat((noise[:, :min_len], noise), dim=1)
                noise_len += min_len  # <-
                return noise * noise_len.float().mean()

        Pad()(torch.randn(2, 5, requires_grad=True), torch.tensor([0.6, 1.0])).sum().backward()
        """,
        None,
    ),
    (
        "a-buffer-also-registered-as-a-none-parameter-is-reset",
        """
        class Norm(nn.Module):
            def __init__(self, track=True):
                super().__init__()
                if track:
                    self.register_buffer("moving_mean", torch.zeros(4))
                else:
                    self.register_parameter("moving_mean", None)
                self.frozen = nn.Parameter(torch.ones(4), requires_grad=False)

            def reset(self):
                self.moving_mean.zero_()  # <-
                self.frozen.fill_(1.0)

            def forward(self, x):
                return x * self.frozen - self.moving_mean

        n = Norm()
        n.reset()
        n(x).sum().backward()
        """,
        None,
    ),
    (
        "a-forward-input-annotated-as-a-tuple-is-not-assumed-to-require-grad",
        """
        class Coords(nn.Module):
            def forward(self, x, scale: tuple[torch.Tensor, float]):
                grid = torch.arange(4.0).repeat(len(x), 1)
                grid[:, 0:2] = grid[:, 0:2] * scale[0]  # <-?
                return x + grid[:, :4]

        Coords()(x, (torch.tensor(2.0), 1.0)).sum().backward()
        """,
        None,
    ),
    (
        "a-copy-to-another-dtype-is-written",
        """
        def f(x):
            s = torch.softmax(x @ torch.randn(4, 4), dim=-1)
            part = s.to(torch.float64)
            part += 1  # <-?
            return s.sum() + part.sum()

        f(x).backward()
        """,
        None,
    ),
    (
        "a-contiguous-copy-of-a-transpose-is-written",
        """
        def f(x):
            s = torch.sigmoid(x)
            m = s.t().contiguous()
            m *= 0.5  # <-
            return s.sum() + m.sum()

        f(x).backward()
        """,
        None,
    ),
    (
        "float-of-a-float32-tensor-is-the-tensor-itself",
        """
        def f(x):
            s = torch.sigmoid(x)
            part = s.float()
            part += 1  # <-
            return s.sum()

        f(x).backward()
        """,
        True,
    ),
    (
        "a-constructor-flag-known-false-never-runs-its-branch",
        """
        class Encoder(nn.Module):
            def __init__(self, clip=False):
                super().__init__()
                self.clip = clip
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                feat = torch.tanh(self.fc(x))
                if self.clip and feat.shape[0] > 0:
                    feat.clamp_(-0.5, 0.5)  # <-
                return feat

        Encoder(clip=False)(x).sum().backward()
        """,
        None,
    ),
    (
        "an-argument-left-at-its-default-none-skips-the-chunked-write",
        """
        class Mix(nn.Module):
            def __init__(self, outgoing=True):
                super().__init__()
                self.outgoing = outgoing

            def _combine(self, a, b, chunk=None):
                if self.outgoing:
                    a = a.t()
                if chunk is not None:
                    for i in range(0, a.shape[0], chunk):
                        a[i : i + chunk] = torch.matmul(a[i : i + chunk], b)  # <-
                    return a
                return a @ b

            def forward(self, x):
                a = torch.sigmoid(x)
                return self._combine(a, a)

        Mix()(x).sum().backward()
        """,
        None,
    ),
    (
        "a-forward-hook-clamps-the-output-tanh-saved",
        """
        def clip(module, inputs, output):
            output[output > 0.5] = 0.5  # <-

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.act = nn.Tanh()

            def forward(self, x):
                return self.act(self.fc(x))

        net = Net()
        net.act.register_forward_hook(clip)
        net(x).sum().backward()
        """,
        True,
    ),
    (
        "a-forward-hook-that-returns-a-new-output",
        """
        def clip(module, inputs, output):
            output = output.clamp(max=0.5)
            output += 0.0  # <-
            return output

        net = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        net[1].register_forward_hook(clip)
        net(x).sum().backward()
        """,
        None,
    ),
    (
        "an-ema-copy-updated-outside-no-grad",
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        ema = copy.deepcopy(model)
        model(x).sum().backward()
        for e, p in zip(ema.parameters(), model.parameters()):
            e.lerp_(p.detach(), 0.01)  # <-
        """,
        "leaf",
    ),
    (
        "an-ema-copy-updated-under-no-grad",
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        ema = copy.deepcopy(model)
        model(x).sum().backward()
        with torch.no_grad():
            for i, (e, p) in enumerate(zip(ema.parameters(), model.parameters())):
                e.lerp_(p, 0.01)  # <-
        """,
        None,
    ),
    (
        "states-collected-in-a-list-then-stacked-and-a-step-between-epochs",
        """
        class Cell(nn.Module):
            def __init__(self):
                super().__init__()
                self.rec = nn.Linear(4, 4)
                self.decay = nn.Parameter(torch.full((4,), 0.9))

            def forward(self, x):
                mem = torch.zeros(3, 4)
                outs = []
                for t in range(2):
                    mem *= self.decay
                    outs.append(mem + self.rec(x))
                return torch.stack(outs).mean()

        model = Cell()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.zero_grad()
            model(x).backward()
            opt.step()  # <-
        """,
        None,
    ),
    (
        "the-last-state-of-a-list-written-in-place",
        """
        def f(x):
            outs = []
            for t in range(2):
                outs.append(torch.sigmoid(x))
                outs[-1] += 0.1  # <-
            return torch.stack(outs).sum()

        f(x).backward()
        """,
        True,
    ),
    (
        "a-break-on-the-first-step-of-a-small-range",
        """
        def f(x):
            h = torch.tanh(x)
            m = h.permute(1, 0)
            for step in range(2):
                if step == 0:
                    break
                m *= 0.5  # <-
            return h.sum()

        f(x).backward()
        """,
        None,
    ),
    (
        "a-write-on-the-second-step-of-a-small-range",
        """
        def f(x):
            h = torch.tanh(x)
            for step in range(3):
                if step == 1:
                    h *= 0.5  # <-
            return h.sum()

        f(x).backward()
        """,
        True,
    ),
    (
        "the-call-site-shows-forward-s-input-needs-no-grad",
        """
        class Clipped(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.head = nn.Linear(4, 1)

            def forward(self, x):
                h = torch.relu(self.fc(x))
                self.fc.weight.requires_grad = False
                self.fc.weight.copy_(torch.eye(4))  # <-
                return self.head(h)

        Clipped()(torch.randn(3, 4)).sum().backward()
        """,
        None,
    ),
    (
        "the-call-site-shows-forward-s-input-needs-grad",
        """
        class Clipped(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.head = nn.Linear(4, 1)

            def forward(self, x):
                h = torch.relu(self.fc(x))
                self.fc.weight.requires_grad = False
                self.fc.weight.copy_(torch.eye(4))  # <-
                return self.head(h)

        Clipped()(x).sum().backward()
        """,
        True,
    ),
    (
        "a-moduledict-run-in-the-order-a-constant-list-gives",
        """
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.stages = nn.ModuleDict({"l0": nn.Linear(4, 4), "l1": nn.ELU(inplace=True)})
                self.order = ["l0", "l1"]

            def forward(self, x):
                h = x
                for name in self.order:
                    h = self.stages[name](h)
                h += 1.0  # <-
                return h

        Gate()(x).sum().backward()
        """,
        True,
    ),
    (
        "a-gather-index-bumped-after-the-gather",
        """
        def f(e):
            idx = e.norm(dim=-1).argmax(dim=-1, keepdim=True)
            picked = e.gather(1, idx.unsqueeze(-1).expand(-1, 1, e.shape[-1]))
            idx += 1  # <-
            return (e + picked).sum()

        f(torch.randn(2, 3, 4, requires_grad=True)).backward()
        """,
        True,
    ),
    (
        "an-actor-critic-step-between-the-two-backwards",
        """
        body, actor, critic = nn.Linear(4, 4), nn.Linear(4, 2), nn.Linear(4, 1)
        opt_a = torch.optim.Adam(list(body.parameters()) + list(actor.parameters()), lr=1e-3)
        opt_c = torch.optim.SGD(list(body.parameters()) + list(critic.parameters()), lr=0.1)
        feat = body(x)
        value = critic(feat)
        actor_loss = -(actor(feat).log_softmax(-1)[:, :1] * (1.0 - value)).mean()
        critic_loss = (1.0 - value).pow(2).mean()
        critic_loss.backward(retain_graph=True)
        opt_c.step()  # <-
        actor_loss.backward()
        opt_a.step()
        """,
        True,
    ),
    (
        "a-custom-function-saves-its-input-which-is-then-written",
        """
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                ctx.save_for_backward(t)
                return t * t

            @staticmethod
            def backward(ctx, grad):
                (t,) = ctx.saved_tensors
                return 2 * t * grad

        def f(x):
            h = x * 1.5
            y = Square.apply(h)
            h.tanh_()  # <-
            return y.sum()

        f(x).backward()
        """,
        True,
    ),
    (
        "a-custom-function-that-saves-nothing",
        """
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def f(x):
            h = x * 1.5
            y = Double.apply(h)
            h.tanh_()  # <-
            return y.sum()

        f(x).backward()
        """,
        None,
    ),
    (
        "a-step-after-zero-grad-and-before-any-backward-changes-nothing",
        """
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            optimizer.step()  # <-
            loss.backward()
        """,
        None,
    ),
    (
        "a-step-with-gradients-kept-before-the-backward-that-needs-the-weights",
        """
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(x).sum().backward()
        loss = model(x).pow(2).mean()
        optimizer.step()  # <-
        loss.backward()
        """,
        True,
    ),
    (
        "an-ema-copy-frozen-with-requires-grad-false",
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        ema = copy.deepcopy(model)
        ema.requires_grad_(False)
        model(x).sum().backward()
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(0.99).add_(p.detach(), alpha=0.01)  # <-
        """,
        None,
    ),
    (
        "an-inference-cache-written-outside-inference-mode",
        """
        fc = nn.Linear(4, 4)
        with torch.inference_mode():
            cache = fc(x)
        cache /= 2.0  # <-
        (fc(x) + cache).sum().backward()
        """,
        "refused",
    ),
    (
        "an-inference-cache-written-inside-inference-mode",
        """
        fc = nn.Linear(4, 4)
        with torch.inference_mode():
            cache = fc(x)
            cache /= 2.0  # <-
        fc(x).sum().backward()
        """,
        None,
    ),
    (
        "a-view-of-a-normal-tensor-taken-in-inference-mode-and-written-outside",
        """
        buf = torch.zeros(3, 4)
        with torch.inference_mode():
            head = buf[:2]
        head += 1  # <-
        (x * buf).sum().backward()
        """,
        None,
    ),
    (
        "inference-mode-off-makes-no-inference-tensor",
        """
        fc = nn.Linear(4, 4)
        with torch.inference_mode(False):
            cache = torch.zeros(3, 4)
        cache /= 2.0  # <-
        (fc(x) + cache).sum().backward()
        """,
        None,
    ),
    (
        "the-result-of-an-inference-mode-function-written-by-its-caller",
        """
        fc = nn.Linear(4, 4)

        @torch.inference_mode()
        def predict(x):
            return torch.softmax(fc(x), dim=-1)

        probs = predict(x)
        probs[:, 0] = 0  # <-
        fc(x).sum().backward()
        """,
        "refused",
    ),
    (
        "out-with-an-argument-that-requires-grad",
        """
        h = torch.empty(3, 4)
        torch.mul(x, 2.0, out=h)  # <-
        h.sum()
        """,
        "refused",
    ),
    (
        "out-under-no-grad",
        """
        h = torch.empty(3, 4)
        with torch.no_grad():
            torch.mul(x, 2.0, out=h)  # <-
        (x * h).sum().backward()
        """,
        None,
    ),
    (
        "a-chunk-of-a-tensor-that-requires-grad-written-in-place",
        """
        value, gate = (x * 2).chunk(2, dim=-1)
        value.mul_(torch.sigmoid(gate))  # <-
        value.sum().backward()
        """,
        "refused",
    ),
    (
        "a-chunk-written-under-no-grad",
        """
        h = x * 2
        value, gate = h.chunk(2, dim=-1)
        with torch.no_grad():
            value.zero_()  # <-?
        h.sum().backward()
        """,
        None,
    ),
    (
        "a-tensor-split-piece-written-in-place",
        """
        h = x * 2
        value, gate = h.tensor_split(2, dim=-1)
        value += 1  # <-?
        h.sum().backward()
        """,
        None,
    ),
    (
        "a-chunk-of-a-tensor-without-grad-written-in-place",
        """
        noise = torch.randn(3, 4)
        a, b = noise.chunk(2, dim=-1)
        a.mul_(0.5)  # <-
        (x * noise).sum().backward()
        """,
        None,
    ),
    (
        "a-view-made-under-no-grad-written-with-grad-on",
        """
        h = x * 2
        with torch.no_grad():
            head = h[:, :2]
        head.clamp_(-1, 1)  # <-
        h.sum().backward()
        """,
        "refused",
    ),
    (
        "a-view-made-under-no-grad-written-under-no-grad",
        """
        h = x * 2
        with torch.no_grad():
            head = h[:, :2]
        with torch.no_grad():
            head.clamp_(-1, 1)  # <-?
        h.sum().backward()
        """,
        None,
    ),
    (
        "an-ema-copy-updated-before-the-backward-its-forward-needs",
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        ema = copy.deepcopy(model)
        loss = (model(x) - ema(x)).pow(2).mean()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters()):
                e.mul_(0.99).add_(p, alpha=0.01)  # <-
        loss.backward()
        """,
        True,
    ),
    (
        "a-frozen-ema-copy-updated-before-backward",
        """
        import copy

        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
        ema = copy.deepcopy(model)
        ema.requires_grad_(False)
        loss = (model(torch.randn(3, 4)) - ema(torch.randn(3, 4))).pow(2).mean()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters()):
                e.mul_(0.99).add_(p, alpha=0.01)  # <-
        loss.backward()
        """,
        None,
    ),
    (
        "a-view-of-a-leaf-written-with-grad-on",
        """
        v = x[None]
        v += 1  # <-
        """,
        "leaf",
    ),
    (
        "float-of-a-float-leaf-is-the-leaf-itself",
        """
        v = x.float()
        v.mul_(2)  # <-
        """,
        "leaf",
    ),
    (
        "double-of-a-float-leaf-is-a-copy",
        """
        v = x.double()
        v.mul_(2)  # <-
        v.sum().backward()
        """,
        None,
    ),
    (
        "a-view-of-a-leaf-taken-with-grad-on-and-written-under-no-grad",
        """
        v = x[:2]
        with torch.no_grad():
            v.mul_(2)  # <-?
        (x * 2).sum().backward()
        """,
        None,
    ),
    (
        "zeroing-a-bias-keeps-the-weight-a-linear-saved",
        """
        fc = nn.Linear(4, 4)
        h = fc(x)
        with torch.no_grad():
            fc.bias.zero_()  # <-
        h.sum().backward()
        """,
        None,
    ),
    (
        "scaling-the-weight-a-linear-saved",
        """
        fc = nn.Linear(4, 4)
        h = fc(x)
        with torch.no_grad():
            fc.weight.mul_(0.5)  # <-
        h.sum().backward()
        """,
        True,
    ),
    (
        "layer-norm-over-the-last-dimension-saves-its-input",
        """
        import torch.nn.functional as F

        def f(x):
            h = x * 2
            n = F.layer_norm(h, (h.shape[-1],))
            h += 1  # <-
            return n

        f(x).sum().backward()
        """,
        True,
    ),
    (
        "a-row-unpacked-from-a-tensor-that-requires-grad-written-in-place",
        """
        q, k, v = (x * 2)[:3].reshape(3, 2, 2)
        q *= 0.5  # <-
        (q @ k @ v).sum().backward()
        """,
        "refused",
    ),
    (
        "a-row-iterated-from-a-tensor-that-requires-grad-written-in-place",
        """
        for row in x * 2:
            row.clamp_(min=0.0)  # <-
        """,
        "refused",
    ),
    (
        "the-hidden-state-of-an-lstm-written-in-place",
        """
        lstm = nn.LSTM(4, 8, batch_first=True)
        out, (h, c) = lstm(x[None])
        h += 1  # <-
        (out.sum() + h.sum()).backward()
        """,
        None,
    ),
    (
        "out-into-a-maybe-copy-while-an-argument-requires-grad",
        """
        h = x * 2
        torch.mul(h[:, :2].contiguous(), 0.5, out=h[:, :2].contiguous())  # <-
        """,
        "refused",
    ),
    (
        "a-function-chosen-at-run-time-is-followed-either-way",
        """
        import sys


        def scale_(h):
            h.mul_(2)  # <-
            return h


        def scale(h):
            return h * 2


        def f(x, fast):
            h = x.sigmoid()
            op = scale_ if fast else scale
            return op(h)


        f(x, len(sys.argv) > 0).sum().backward()
        """,
        True,
    ),
    (
        "an-optimizer-kernel-chosen-at-run-time-runs-under-its-callers-no-grad",
        """
        import sys


        def _single(m, v):
            torch.max(m, v, out=m)  # <-


        def _multi(m, v):
            torch.maximum(m, v, out=m)


        @torch.no_grad()
        def step(m, v, foreach):
            func = _multi if foreach else _single
            func(m, v)


        w = torch.randn(3, 4, requires_grad=True)
        step(w * 1, x, len(sys.argv) == 0)
        """,
        None,
    ),
    (
        "as-tensor-of-a-tensor-is-that-tensor",
        """
        h = x * 2
        a = torch.as_tensor(h)
        y = h.pow(2)
        a.add_(1)  # <-
        y.sum().backward()
        """,
        True,
    ),
    (
        "as-tensor-of-a-list-is-a-new-tensor",
        """
        h = x * 2
        a = torch.as_tensor([1.0, 2.0, 3.0, 4.0])
        y = h.pow(2)
        a.add_(1)  # <-
        y.sum().backward()
        """,
        None,
    ),
    (
        "bernoulli-of-probabilities-that-require-grad-is-in-the-graph",
        """
        p = x.sigmoid()
        m = torch.bernoulli(p)
        y = m.pow(2)
        m.add_(1)  # <-
        (y + p).sum().backward()
        """,
        True,
    ),
    (
        "a-view-by-T-of-a-transposed-tensor-reshaped-is-a-view",
        """
        h = x * 2
        y = h.pow(2)
        h.t().T.reshape(-1).mul_(2)  # <-
        y.sum().backward()
        """,
        True,
    ),
]


def _program(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def _marked_line(text: str) -> int:
    (line,) = [n for n, t in enumerate(text.splitlines(), start=1) if t.endswith(("# <-", "<-?"))]
    return line


@pytest.mark.parametrize(
    ("body", "raises"), [p[1:] for p in PROGRAMS], ids=[p[0] for p in PROGRAMS]
)
def test_torch_agrees_and_errors_follow_what_runs(body: str, raises: object) -> None:
    text = _program(body)
    raised: object = None
    try:
        exec(compile(text, "<program>", "exec"), {"__name__": "program"})  # noqa: S102
    except RuntimeError as exc:
        outcome = outcome_of_error(str(exc))
        if outcome is None:
            raise
        raised = outcome.removesuffix("-error")
    expected = "inplace" if raises is True else (raises or None)
    assert raised == expected, "the program's label disagrees with torch"
    findings = analyze(text, "program.py")
    errors = [f.span.line for f in findings if f.severity is Severity.ERROR]
    assert errors == ([_marked_line(text)] if raises else [])
    if not raises and not text.splitlines()[_marked_line(text) - 1].endswith("<-?"):
        # The marked line never runs, or runs harmlessly: not even a warning (`# <-?`: a
        # warning that names what it rests on may stand).
        marked = _marked_line(text)
        assert [f for f in findings if f.span.line == marked and f.severity in REPORTED] == []


def test_a_warning_names_the_argument_it_rests_on() -> None:
    """`labels` of a helper method is not known to require grad: the Warning says so (without
    the driver: with it, its call site shows integer labels, and nothing is reported)."""
    (body,) = [b for name, b, _ in PROGRAMS if name.startswith("a-helper-method")]
    text = _program(body)
    assert [f for f in analyze(text, "program.py") if f.severity is Severity.WARNING] == []
    text = text[: text.index("m = Model()")]
    (warning,) = [f for f in analyze(text, "program.py") if f.severity is Severity.WARNING]
    assert warning.span.line == _marked_line(text)
    # A helper method's result: only a backward() of its caller's would fail, which is said.
    assert "so backward() fails if `labels` requires grad, and only if a later backward()" in (
        warning.message
    )


def _with_helper_of(statements: int) -> str:
    lines = "".join(f"    y = y + {i}\n" for i in range(statements))
    return _program(
        "def unrelated(x):\n    y = x * 1\n" + lines + "    return y\n\n\n"
        "def scale(h):\n    h.mul_(2)  # <-\n    return h\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        a = unrelated(x)\n"
        "        h = torch.sigmoid(x)\n        h = scale(h)\n        return h + a\n\n\n"
        "Net()(x).sum().backward()\n"
    )


@pytest.mark.parametrize("statements", [10, 2_000])
def test_an_unrelated_helper_growing_changes_no_finding(statements: int) -> None:
    """Whether a call is followed depends on the called code only: a 2,000-statement helper
    called first leaves `scale`'s write into the sigmoid's saved output an Error."""
    text = _with_helper_of(statements)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        exec(compile(text, "<program>", "exec"), {"__name__": "program"})  # noqa: S102
    errors = [f.span.line for f in analyze(text, "program.py") if f.severity is Severity.ERROR]
    assert errors == [_marked_line(text)]


ATTENTION = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)

    def forward(self, x):
        attn_map = (self.q(x) @ x.transpose(-1, -2)).softmax(dim=-1)
        attn_map[:, 0] = 0  # <-
        return attn_map @ x
"""


def test_a_subscript_write_is_analysed_whatever_the_variable_is_called() -> None:
    """`attn_map` ends like a dict's name ("map"): the write into the softmax's saved output
    is an Error all the same (here no code of the file calls forward: it is analysed alone)."""
    driver = "\nAttention(8)(torch.randn(2, 3, 8, requires_grad=True)).sum().backward()\n"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        exec(compile(ATTENTION + driver, "<program>", "exec"), {"__name__": "program"})  # noqa: S102
    errors = [f.span.line for f in analyze(ATTENTION, "attn.py") if f.severity is Severity.ERROR]
    assert errors == [_marked_line(ATTENTION)]


def test_a_write_into_a_list_element_offers_no_fix() -> None:
    """Cloning `outs[-1]` would rebind the list's name (`outs = outs.clone()` raises on a
    list): no quick fix is offered for it."""
    (body,) = [b for name, b, _ in PROGRAMS if name == "the-last-state-of-a-list-written-in-place"]
    (finding,) = [f for f in analyze(_program(body), "p.py") if f.severity is Severity.ERROR]
    assert finding.fix is None


BRANCHES = """\
import torch


def step(x, w, mask=None):
    h = x * w
    if mask is None:
        y = h.pow(2)
    else:
        y = h * mask
    h += 1  # <-
    return y
"""


@pytest.mark.parametrize(
    ("call", "raises"),
    [
        ("step(torch.randn(3, requires_grad=True), torch.randn(3))", True),
        ("step(torch.randn(3), torch.randn(3, requires_grad=True))", True),
        ("step(torch.randn(3, requires_grad=True), torch.randn(3), torch.ones(3))", False),
    ],
)
def test_a_warning_names_the_branch_and_the_arguments_it_rests_on(call: str, raises: bool) -> None:
    """The save happens only when `if mask is None:` is true, and `h` requires grad when `x`
    or `w` does: the Warning names both, and torch fails exactly then."""
    namespace: dict[str, object] = {}
    exec(compile(BRANCHES, "<program>", "exec"), namespace)  # noqa: S102
    loss = eval(call, namespace).sum()  # noqa: S307
    if raises:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    else:
        loss.backward()
    (warning,) = analyze(BRANCHES, "step.py")
    assert warning.severity is Severity.WARNING and warning.span.line == _marked_line(BRANCHES)
    assert (
        "backward() may fail (when `if mask is None:` (line 6) is true, and if `w` or `x` "
        "requires grad)" in warning.message
    )


KERNEL = """\
import torch


def _grouped_mm(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    output = torch.zeros(input.size(0), weight.size(1))
    torch.mm(input, weight, out=output)  # <-
    return output


grouped_mm = torch.library.custom_op("inplace_lsp_test::grouped_mm", _grouped_mm, mutates_args=())
"""


def test_an_operators_kernel_runs_below_autograd() -> None:
    """`torch.mm(..., out=)` in a function torch.library.custom_op registers: the kernel runs
    with grad mode off, so it never raises (called directly with tensors that require grad,
    it would, and the Warning names them)."""
    import torch

    namespace: dict[str, object] = {}
    exec(compile(KERNEL, "<program>", "exec"), namespace)  # noqa: S102
    a, w = torch.randn(2, 3, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    namespace["grouped_mm"](a, w)  # type: ignore[operator]
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        namespace["_grouped_mm"](a, w)  # type: ignore[operator]
    assert analyze(KERNEL, "kernel.py") == []
    registration = KERNEL.index("grouped_mm = ")
    (warning,) = analyze(KERNEL[:registration], "kernel.py")
    assert warning.span.line == _marked_line(KERNEL)
    assert "torch raises here if `input` or `weight` requires grad" in warning.message


AS_FLOAT = """\
import torch


def as_float(image):
    if image.is_floating_point():
        return image
    return image.float() / 255


def brighten(image):
    scaled = image * 2
    out = as_float(scaled)
    y = scaled.pow(2)
    out.mul_(1.5)  # <-
    return y
"""


def test_a_warning_names_the_function_that_may_return_its_argument() -> None:
    """`as_float` returns its argument on one path and a copy on the other: whether the write
    reaches the saved tensor rests on which (a float image: itself, and torch raises), and
    the Warning says so."""
    import torch

    namespace: dict[str, object] = {}
    exec(compile(AS_FLOAT, "<program>", "exec"), namespace)  # noqa: S102
    loss = namespace["brighten"](torch.rand(3, requires_grad=True)).sum()  # type: ignore[operator]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    (warning,) = analyze(AS_FLOAT, "bright.py")
    assert warning.severity is Severity.WARNING and warning.span.line == _marked_line(AS_FLOAT)
    assert "fails if `as_float()` returns its argument `image` (not a copy)" in warning.message


SCHEDULER = """\
import torch


class Scheduler:
    def rescale(self):
        alphas_bar_sqrt = torch.cumprod(1.0 - self.betas, dim=0).sqrt()
        alphas_bar_sqrt -= alphas_bar_sqrt[-1].clone()  # <-
        return alphas_bar_sqrt
"""


def test_a_warning_names_the_attribute_it_rests_on() -> None:
    """`self.betas` of a plain class is not known: the Warning names it, and torch fails
    when it requires grad (it runs when it does not)."""
    import torch

    namespace: dict[str, object] = {}
    exec(compile(SCHEDULER, "<program>", "exec"), namespace)  # noqa: S102
    scheduler = namespace["Scheduler"]()  # type: ignore[operator]
    scheduler.betas = torch.rand(5) * 0.1
    scheduler.rescale().sum()
    scheduler.betas = (torch.rand(5) * 0.1).requires_grad_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        scheduler.rescale().sum().backward()
    (warning,) = analyze(SCHEDULER, "scheduler.py")
    assert warning.severity is Severity.WARNING and warning.span.line == _marked_line(SCHEDULER)
    assert "so backward() fails if `self.betas` requires grad" in warning.message
