"""revisit_adv_rec: the WMF surrogate trained by ALS writes each solved user row straight into the nn.Parameter, `model.P[user] = new_p_u.t()`."""
# outcome: leaf-error
# source: https://github.com/graytowne/revisit_adv_rec/issues/3
# repo: graytowne/revisit_adv_rec
# category: leaf
# twin: 303_revisit_adv_rec_wmf_als_row_assign_fixed.py
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


# stand-in for bunch (not installed here)
class Bunch(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key)

    def __setattr__(self, key, value):
        self[key] = value


# stand-in for scipy.sparse.csr_matrix (not installed here): rows, transpose, toarray
class csr_matrix(object):
    def __init__(self, array):
        self._a = np.asarray(array, dtype=np.float32)
        if self._a.ndim == 1:
            self._a = self._a.reshape(1, -1)
        self.shape = self._a.shape

    def toarray(self):
        return self._a

    def transpose(self):
        return csr_matrix(self._a.T)

    def __getitem__(self, idx):
        return csr_matrix(self._a[idx])

    def __iter__(self):
        for row in self._a:
            yield csr_matrix(row)


# ---- utils/utils.py ----
EPSILON = 1e-12


def set_seed(seed, cuda=False):
    """Set seed globally."""
    np.random.seed(seed)
    random.seed(seed)
    if cuda:
        torch.cuda.manual_seed(seed)
        torch.backends.cudnn.deterministic = True
    else:
        torch.manual_seed(seed)


def minibatch(*tensors, **kwargs):
    """Mini-batch generator for pytorch tensor."""
    batch_size = kwargs.get('batch_size', 128)

    if len(tensors) == 1:
        tensor = tensors[0]
        for i in range(0, len(tensor), batch_size):
            yield tensor[i:i + batch_size]
    else:
        for i in range(0, len(tensors[0]), batch_size):
            yield tuple(x[i:i + batch_size] for x in tensors)


def sparse2tensor(sparse_data):
    """Convert sparse csr matrix to pytorch tensor."""
    return torch.FloatTensor(sparse_data.toarray())


def tensor2sparse(tensor):
    """Convert pytorch tensor to sparse csr matrix."""
    return csr_matrix(tensor.detach().cpu().numpy())


# ---- trainers/losses.py ----
def mse_loss(data, logits, weight):
    """Mean square error loss."""
    weights = torch.ones_like(data)
    weights[data > 0] = weight
    res = weights * (data - logits) ** 2
    return res.sum(1)


def mult_ce_loss(data, logits):
    """Multi-class cross-entropy loss."""
    log_probs = F.log_softmax(logits, dim=-1)
    loss = -log_probs * data

    instance_data = data.sum(1)
    instance_loss = loss.sum(1)
    # Avoid divide by zeros.
    res = instance_loss / (instance_data + EPSILON)
    return res


# ---- trainers/base_trainer.py (the part used here) ----
class BaseTrainer(object):
    def __init__(self):
        self.args = None

        self.n_users = None
        self.n_items = None

        self.net = None
        self.optimizer = None
        self.metrics = None
        self.golden_metric = "Recall@50"

    def __repr__(self):
        return self.args["model"]["model_name"] + "_" + str(self.net)

    @property
    def _initialized(self):
        return self.net is not None

    def _initialize(self):
        """Initialize model and optimizer."""
        # See actual implementation in each trainer.
        raise NotImplementedError

    def train_epoch(self, data):
        """Train model for one epoch"""
        # See actual implementation in each trainer.
        raise NotImplementedError


# ---- trainers/wmf_trainer.py ----
def _array2sparsediag(x):
    values = x
    indices = np.vstack([np.arange(x.size), np.arange(x.size)])

    i = torch.LongTensor(indices)
    v = torch.FloatTensor(values)
    shape = [x.size, x.size]

    return torch.sparse.FloatTensor(i, v, torch.Size(shape))


class WeightedMF(nn.Module):
    def __init__(self, n_users, n_items, model_args):
        super(WeightedMF, self).__init__()

        hidden_dims = model_args.hidden_dims
        if len(hidden_dims) > 1:
            raise ValueError("WMF can only have one latent dimension.")

        self.n_users = n_users
        self.n_items = n_items
        self.dim = hidden_dims[0]

        self.Q = nn.Parameter(
            torch.zeros([self.n_items, self.dim]).normal_(mean=0, std=0.1))
        self.P = nn.Parameter(
            torch.zeros([self.n_users, self.dim]).normal_(mean=0, std=0.1))
        self.params = nn.ParameterList([self.Q, self.P])

    def forward(self, user_id=None, item_id=None):
        if user_id is None and item_id is None:
            return torch.mm(self.P, self.Q.t())
        if user_id is not None:
            return torch.mm(self.P[[user_id]], self.Q.t())
        if item_id is not None:
            return torch.mm(self.P, self.Q[[item_id]].t())


class WMFTrainer(BaseTrainer):
    def __init__(self, n_users, n_items, args):
        super(WMFTrainer, self).__init__()
        self.args = args

        self.device = torch.device("cuda" if self.args.use_cuda else "cpu")

        self.n_users = n_users
        self.n_items = n_items

        self.metrics = self.args.metrics

    def _initialize(self):
        model_args = Bunch(self.args.model)
        if not hasattr(model_args, "optim_method"):
            model_args.optim_method = "sgd"
        self.net = WeightedMF(
            n_users=self.n_users, n_items=self.n_items,
            model_args=model_args).to(self.device)

        self.optimizer = optim.Adam(self.net.parameters(), lr=self.args.lr,
                                    weight_decay=self.args.l2)

        self.optim_method = model_args.optim_method
        self.weight_alpha = self.args.model["weight_alpha"]
        self.dim = self.net.dim

    def train_epoch(self, *args, **kwargs):
        if self.optim_method not in ("sgd", "als"):
            raise ValueError("Unknown optim_method {} for WMF.".format(
                self.optim_method))

        if self.optim_method == "sgd":
            return self.train_sgd(*args, **kwargs)
        if self.optim_method == "als":
            return self.train_als(*args, **kwargs)

    def train_als(self, data):
        model = self.net  # A warning will raise if use .to() method here.
        P = model.P.detach()
        Q = model.Q.detach()

        weight_alpha = self.weight_alpha - 1
        # Using PyTorch for ALS optimization
        # Update P
        lamda_eye = torch.eye(self.dim).to(self.device) * self.args.l2
        # residual = Q^tQ + lambda*I
        residual = torch.mm(Q.t(), Q) + lamda_eye
        for user, batch_data in enumerate(data):
            # x_u: N x 1
            x_u = sparse2tensor(batch_data).to(self.device).t()
            # Cu = diagMat(alpha * rating + 1)
            cu = batch_data.toarray().squeeze() * weight_alpha + 1
            Cu = _array2sparsediag(cu).to(self.device)
            Cu_minusI = _array2sparsediag(cu - 1).to(self.device)
            # Q^tCuQ + lambda*I = Q^tQ + lambda*I + Q^t(Cu-I)Q
            # left hand side
            lhs = torch.mm(Q.t(), Cu_minusI.mm(Q)) + residual
            # right hand side
            rhs = torch.mm(Q.t(), Cu.mm(x_u))

            new_p_u = torch.mm(lhs.inverse(), rhs)
            model.P[user] = new_p_u.t()  # error: IPL002

        # Update Q
        data = data.transpose()
        # residual = P^tP + lambda*I
        residual = torch.mm(P.t(), P) + lamda_eye
        for item, batch_data in enumerate(data):
            # x_v: M x 1
            x_v = sparse2tensor(batch_data).to(self.device).t()
            # Cv = diagMat(alpha * rating + 1)
            cv = batch_data.toarray().squeeze() * weight_alpha + 1
            Cv = _array2sparsediag(cv).to(self.device)
            Cv_minusI = _array2sparsediag(cv - 1).to(self.device)
            # left hand side
            lhs = torch.mm(P.t(), Cv_minusI.mm(P)) + residual
            # right hand side
            rhs = torch.mm(P.t(), Cv.mm(x_v))

            new_q_v = torch.mm(lhs.inverse(), rhs)
            model.Q[item] = new_q_v.t()  # error: IPL002

        return 0

    def train_sgd(self, data):
        n_rows = data.shape[0]
        idx_list = np.arange(n_rows)

        # Set model to training mode.
        model = self.net.to(self.device)
        model.train()
        np.random.shuffle(idx_list)

        epoch_loss = 0.0
        batch_size = (self.args.batch_size
                      if self.args.batch_size > 0 else len(idx_list))
        for batch_idx in minibatch(
                idx_list, batch_size=batch_size):
            batch_tensor = sparse2tensor(data[batch_idx]).to(self.device)

            # Compute loss
            outputs = model(user_id=batch_idx)
            loss = mse_loss(data=batch_tensor,
                            logits=outputs,
                            weight=self.weight_alpha).sum()
            epoch_loss += loss.item()

            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        return epoch_loss

    def fit_adv(self, *args, **kwargs):
        self._initialize()

        if self.optim_method not in ("sgd", "als"):
            raise ValueError("Unknown optim_method {} for WMF.".format(
                self.optim_method))

        if self.optim_method == "sgd":
            raise NotImplementedError("the sgd surrogate needs `higher` (not installed here)")
        if self.optim_method == "als":
            return self.fit_adv_als(*args, **kwargs)

    def fit_adv_als(self, data_tensor, epoch_num, unroll_steps,
                    n_fakes, target_items):
        if not data_tensor.requires_grad:
            raise ValueError("To compute adversarial gradients, data_tensor "
                             "should have requires_grad=True.")

        train_data = tensor2sparse(data_tensor)
        for i in range(1, epoch_num + 1):
            t1 = time.time()
            self.train_als(data=train_data)
            print("Training [{:.1f} s], epoch: {}".format(time.time() - t1, i))

        data_tensor = data_tensor.to(self.device)
        target_tensor = torch.zeros_like(data_tensor)
        target_tensor[:, target_items] = 1.0

        model = self.net.to(self.device)
        model.eval()

        # Compute adversarial (outer) loss.
        predictions = model()
        adv_loss = mult_ce_loss(
            logits=predictions[:-n_fakes, ],
            data=target_tensor[:-n_fakes, ]).sum()
        dloss_dpreds = torch.autograd.grad(adv_loss, predictions)[0]

        # Transpose both data_tensor and dloss_dpreds for easy indexing later.
        data_tensor = data_tensor.t()
        dloss_dpreds = dloss_dpreds.t()

        P = model.P.detach()

        weight_alpha = self.weight_alpha - 1
        lamda_eye = torch.eye(self.dim).to(self.device) * self.args.l2
        # residual = P^tP + lambda*I
        residual = torch.mm(P.t(), P) + lamda_eye

        adv_grads = list()
        for i, x_v in enumerate(data_tensor):
            # Cv = diagMat(alpha * rating + 1)
            cv = x_v.detach().cpu().numpy() * weight_alpha + 1
            Cv = _array2sparsediag(cv).to(self.device)
            Cv_minusI = _array2sparsediag(cv - 1).to(self.device)
            # left hand side
            lhs = torch.mm(P.t(), Cv_minusI.mm(P)) + residual
            # right hand side
            rhs = torch.mm(P.t(), Cv.mm(x_v.view(-1, 1)))

            new_q_v = torch.mm(lhs.inverse(), rhs)
            r_v = torch.mm(P, new_q_v)

            adv_grad = torch.autograd.grad(r_v, x_v, dloss_dpreds[i].view_as(r_v))[0]
            adv_grads.append(adv_grad.view(-1, 1))
        adv_grads = torch.cat(adv_grads, dim=1)

        return adv_loss.item(), adv_grads[-n_fakes:, :]


# ---- trainers/adv_trainer.py (the adversarial epoch) ----
class BlackBoxAdvTrainer:
    def __init__(self, n_users, n_items, args):
        self.args = args

        self.device = torch.device("cuda" if self.args.use_cuda else "cpu")

        self.n_users = n_users
        self.n_items = n_items
        self.n_fakes = args.n_fakes if args.n_fakes > 1 else int(n_users * args.n_fakes)

        self.target_items = args.target_items
        self.golden_metric = "TargetHR@50"

    def init_fake_data(self, train_data):
        """Initialize fake data by random sampling."""
        max_allowed_click = 3
        fake_data = np.zeros([self.n_fakes, self.n_items], dtype=np.float32)
        for i in range(self.n_fakes):
            fake_data[i, np.random.choice(self.n_items, max_allowed_click, replace=False)] = 1.0
        return csr_matrix(fake_data)

    def _initialize(self, train_data):
        """Initialize fake data."""
        fake_data = self.init_fake_data(train_data=train_data)

        self.fake_tensor = sparse2tensor(fake_data)
        self.fake_tensor.requires_grad_()

        self.optimizer = optim.SGD([self.fake_tensor],
                                   lr=self.args.adv_lr,
                                   momentum=self.args.adv_momentum)

    def train_epoch(self, train_data, epoch_num):
        """Train fake data for one epoch to optimize adversarial objective."""
        def compute_adv_grads():
            """Helper function for computing the adversarial gradient."""
            # Reset the surrogate model.
            sur_args = Bunch(self.args.surrogate)
            sur_args.model_load_path = ""
            sur_trainer_class = sur_args.model["trainer_class"]
            sur_trainer_ = sur_trainer_class(
                n_users=self.n_users + self.n_fakes,
                n_items=self.n_items,
                args=sur_args)

            data_tensor = torch.cat(
                [sparse2tensor(train_data).to(self.device),
                 self.fake_tensor.detach().clone().to(self.device)], dim=0)
            data_tensor.requires_grad_()

            # Train surrogate model.
            adv_loss_, adv_grads_ = sur_trainer_.fit_adv(
                data_tensor=data_tensor,
                epoch_num=sur_args["epochs"],
                unroll_steps=self.args.unroll_steps,
                n_fakes=self.n_fakes,
                target_items=self.target_items
            )
            return sur_trainer_, adv_loss_, adv_grads_

        def project_tensor(fake_tensor, threshold=0.5):
            """Helper function for projecting fake data to allowable space."""
            return torch.where(fake_tensor > threshold,
                               torch.ones_like(fake_tensor),
                               torch.zeros_like(fake_tensor))

        # Compute adversarial gradients.
        t1 = time.time()
        set_seed(self.args.seed, cuda=self.args.use_cuda)
        self.optimizer.zero_grad()

        sur_trainer, adv_loss, adv_grads = compute_adv_grads()
        if self.args.click_targets:
            adv_grads[:, self.target_items] = 0.0
        print("Adversarial training [{:.1f} s],  epoch: {}, loss: {:.4f}".format(
            time.time() - t1, epoch_num, adv_loss))

        # Normalize the adversarial gradient: with l2-norm, this becomes
        # steepest descent in l2 which makes convergence faster.
        normalized_adv_grads = adv_grads / adv_grads.norm(p=2, dim=1, keepdim=True)
        if self.fake_tensor.grad is None:
            self.fake_tensor.grad = normalized_adv_grads.detach().cpu()
        else:
            self.fake_tensor.grad.data = normalized_adv_grads.detach().cpu()

        # Update fake tensor.
        self.optimizer.step()

        # Project fake tensor.
        new_fake_tensor = project_tensor(
            fake_tensor=self.fake_tensor.data.clone(),
            threshold=self.args.proj_threshold)

        if self.args.click_targets:
            new_fake_tensor[:, self.target_items] = 1.0

        return sur_trainer, new_fake_tensor


# ---- generate_attack_args.py (sizes shrunk) ----
shared_params = {
    "use_cuda": False,
    "metrics": [],
    "seed": 1234,
    "output_dir": "./outputs/",
}
sur_wmf_als = {
    **shared_params,
    "epochs": 2,
    "lr": 1e-3,
    "l2": 5e-2,
    "save_feq": 10,
    "batch_size": 1,
    "valid_batch_size": 512,
    "model": {
        "trainer_class": WMFTrainer,
        "model_name": "Sur-WeightedMF-als",
        "hidden_dims": [8],
        "weight_alpha": 20,
        "optim_method": "als"
    }
}
attack_gen_args = {
    **shared_params,
    "trainer_class": BlackBoxAdvTrainer,
    "attack_type": "adversarial",
    "n_target_items": 2,
    "target_items": np.asarray([3, 7]),
    "n_fakes": 2,
    "adv_epochs": 1,
    "unroll_steps": 1,
    "adv_lr": 1.0,
    "adv_momentum": 0.9,
    "proj_threshold": 0.5,
    "click_targets": True,
    "surrogate": sur_wmf_als,
}


if __name__ == "__main__":
    set_seed(1234)
    n_users, n_items = 12, 20
    train_data = csr_matrix((np.random.rand(n_users, n_items) > 0.8).astype(np.float32))

    args = Bunch(attack_gen_args)
    adv_trainer = BlackBoxAdvTrainer(n_users=n_users, n_items=n_items, args=args)
    adv_trainer._initialize(train_data)
    for epoch_num in range(1, args.adv_epochs + 1):
        sur_trainer, new_fake_tensor = adv_trainer.train_epoch(train_data, epoch_num)
        print("fake clicks:", int(new_fake_tensor.sum().item()))
