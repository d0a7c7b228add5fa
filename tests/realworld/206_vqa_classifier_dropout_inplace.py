"""Bottom-up attention VQA baseline: SimpleClassifier's head is Linear, ReLU, nn.Dropout(dropout, inplace=True), so the dropout overwrites the ReLU output the ReLU saved."""
# outcome: inplace-error
# source: https://github.com/BierOne/bottom-up-attention-vqa/issues/6
# repo: BierOne/bottom-up-attention-vqa
# category: residual
# twin: 207_vqa_classifier_dropout_inplace_fixed.py
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.nn.utils.weight_norm import weight_norm


# ---- utilities/config.py (sizes shrunk) ----
class config:
    mode = 'train'
    visual_glimpses = 1
    output_features = 16
    hid_dim = 8
    epochs = 1
    masks = 3


# ---- utilities/utils.py: Tracker ----
class Tracker:
    """ Keep track of results over time, while having access to monitors to display information about them. """
    def __init__(self):
        self.data = {}

    def track(self, name, *monitors):
        """ Track a set of results with given monitors under some name (e.g. 'val_acc').
            When appending to the returned list storage, use the monitors to retrieve useful information.
        """
        l = Tracker.ListStorage(monitors)
        self.data.setdefault(name, []).append(l)
        return l

    class ListStorage:
        """ Storage of data points that updates the given monitors """
        def __init__(self, monitors=[]):
            self.data = []
            self.monitors = monitors
            for monitor in self.monitors:
                setattr(self, monitor.name, monitor)

        def append(self, item):
            for monitor in self.monitors:
                monitor.update(item)
            self.data.append(item)

    class MeanMonitor:
        name = 'mean'

        def __init__(self):
            self.n = 0
            self.total = 0

        def update(self, value):
            self.total += value
            self.n += 1

        @property
        def value(self):
            return self.total / self.n

    class MovingMeanMonitor:
        name = 'mean'

        def __init__(self, momentum=0.9):
            self.momentum = momentum
            self.first = True
            self.value = None

        def update(self, value):
            if self.first:
                self.value = value
                self.first = False
            else:
                m = self.momentum
                self.value = m * self.value + (1 - m) * value


# ---- model/fc.py ----
class FCNet(nn.Module):
    """
    Simple class for multi-layer non-linear fully connect network
    Activate function: ReLU()
    """
    def __init__(self, dims, dropout=0.0, norm=True):
        super(FCNet, self).__init__()
        self.num_layers = len(dims) -1
        self.drop = dropout
        self.norm = norm
        self.main = nn.Sequential(*self._init_layers(dims))

    def _init_layers(self, dims):
        layers = []
        for i in range(self.num_layers):
            in_dim = dims[i]
            out_dim = dims[i + 1]
            # layers.append(nn.Dropout(self.drop))
            if self.norm:
                layers.append(weight_norm(nn.Linear(in_dim, out_dim), dim=None))
            else:
                layers.append(nn.Linear(in_dim, out_dim))
            layers.append(nn.ReLU())
        return layers

    def forward(self, x):
        return self.main(x)


# ---- model/attention.py ----
class Attention(nn.Module):
    def __init__(self, v_dim, q_dim, hid_dim, glimpses=1, dropout=0.2):
        super(Attention, self).__init__()

        self.v_proj = FCNet([v_dim, hid_dim], dropout)
        self.q_proj = FCNet([q_dim, hid_dim], dropout)
        self.drop = nn.Dropout(dropout)
        self.linear = weight_norm(nn.Linear(hid_dim, glimpses), dim=None)
    def forward(self, v, q):
        """
        v: [batch, k, vdim]
        q: [batch, qdim]
        """
        v_proj = self.v_proj(v)  # [batch, k, vdim]
        q_proj = self.q_proj(q).unsqueeze(1) # [batch, 1, qdim]
        logits = self.linear(self.drop(v_proj * q_proj))
        return nn.functional.softmax(logits, 1), logits


# ---- model/language_model.py ----
class WordEmbedding(nn.Module):
    """Word Embedding

    The ntoken-th dim is used for padding_idx, which agrees *implicitly*
    with the definition in Dictionary.
    """
    def __init__(self, init_emb, freeze=False, dropout=0.0):
        super(WordEmbedding, self).__init__()
        weights = torch.from_numpy(init_emb)
        # self.emb = nn.Embedding.from_pretrained(weights, freeze=freeze) # padding_idx= ntoken
        ntoken, emb_dim = weights.shape
        self.emb = nn.Embedding(ntoken, emb_dim, padding_idx=-1)
        self.emb.weight.data = weights
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.emb(self.drop(x))


class QuestionEmbedding(nn.Module):
    def __init__(self, w_dim, hid_dim, nlayers, bidirect, dropout=0.0, rnn_type='GRU'):
        """Module for question embedding
        """
        super(QuestionEmbedding, self).__init__()
        assert rnn_type in ['LSTM', 'GRU']
        rnn_cls = nn.LSTM if rnn_type == 'LSTM' else nn.GRU

        self.ndirections = 1 + int(bidirect)
        self.rnn = rnn_cls(
            w_dim, hid_dim, nlayers,
            bidirectional=bidirect,
            dropout=dropout,
            batch_first=True)

    def forward(self, x):
        """
        x: [batch, sequence, in_dim]
        return: if ndirections==1: [batch, num_hid] else [batch, 2*num_hid]
        """
        output, hidden = self.rnn(x) # output->[b, s, h], hidden->[1, b, h]
        if self.ndirections == 1:
            return hidden.squeeze(0)
        # get the last hidden unit in forward direction
        forward_ = output[:, -1, :self.num_hid]
        # get the first hidden unit in backward direction
        backward = output[:, 0, self.num_hid:]
        return torch.cat((forward_, backward), dim=1)


# ---- model/classifier.py ----
class SimpleClassifier(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, dropout=0.0):
        super(SimpleClassifier, self).__init__()
        self.q_net = FCNet([in_dim[0], hid_dim[0]], dropout)
        self.v_net = FCNet([in_dim[1], hid_dim[0]], dropout)
        self.main = nn.Sequential(
            nn.Linear(hid_dim[0], hid_dim[1]),
            nn.ReLU(),
            nn.Dropout(dropout, inplace=True),  # error: IPL003
            nn.Linear(hid_dim[1], out_dim)
        )

    def forward(self, q_emb, v_emb):
        joint_repr = self.q_net(q_emb) * self.v_net(v_emb)
        logits = self.main(joint_repr)  # saved-by
        return logits


# ---- model/base_model.py ----
class BaseModel(nn.Module):
    def __init__(self, w_emb, q_emb, v_att, classifier):
        super(BaseModel, self).__init__()
        self.w_emb = w_emb
        self.q_emb = q_emb
        self.v_att = v_att
        self.classifier = classifier

    def forward(self, v, b, q, a, m=config.masks):
        """Forward

        v: [batch, num_objs, obj_dim]
        b: [batch, num_objs, b_dim]
        q: [batch_size, seq_length]
        return: logits, attention_weights
        """
        w_emb = self.w_emb(q)
        q_emb = self.q_emb(w_emb)  # [batch, q_dim]
        att, att_logits = self.v_att(v, q_emb)  # [batch, objs, 1]
        v_emb = (att * v).sum(1)  # [batch, v_dim]
        logits = self.classifier(q_emb, v_emb)
        return logits, att


def build_baseline(embeddings, num_ans_candidates):
    vision_features = config.output_features
    visual_glimpses = config.visual_glimpses
    question_features = hidden_features = config.hid_dim
    w_emb = WordEmbedding(
        embeddings,
        dropout=0.0
    )

    q_emb = QuestionEmbedding(
        w_dim=12,
        hid_dim=question_features,
        nlayers=1,
        bidirect=False,
        dropout=0.0
    )

    v_att = Attention(
        v_dim=vision_features,
        q_dim=question_features*q_emb.ndirections,
        hid_dim=hidden_features,
        glimpses=visual_glimpses,
    )

    classifier = SimpleClassifier(
        in_dim=(question_features*q_emb.ndirections, vision_features),
        hid_dim=(hidden_features, hidden_features * 2),
        out_dim=num_ans_candidates,
        dropout=0.5
    )
    return BaseModel(w_emb, q_emb, v_att, classifier)


# ---- train/train_baseline.py (no tqdm, CPU) ----
def binary_cross_entropy_with_logits(input, target, mean=False):
    """
    Function that measures Binary Cross Entropy between target and output logits:
    """
    if not target.is_same_size(input):
        raise ValueError("Target size ({}) must be the same as input size ({})".format(target.size(), input.size()))
    max_val = (-input).clamp(min=0)
    loss = input - input * target + max_val + ((-max_val).exp() + (-input - max_val).exp()).log()
    loss = loss.sum(dim=1)
    return loss.mean() if mean else loss


def compute_score_with_logits(logits, labels):
    logits = torch.max(logits, 1)[1].data  # argmax
    one_hots = torch.zeros_like(labels)
    one_hots.scatter_(1, logits.view(-1, 1), 1)
    scores = (one_hots * labels)
    return scores.sum(dim=1)


def run(model, loader, optimizer, tracker, train=False, has_answers=True, prefix='', epoch=0):
    if train:
        model.train()
        tracker_class, tracker_params = tracker.MovingMeanMonitor, {'momentum': 0.99}
    else:
        model.eval()
        tracker_class, tracker_params = tracker.MeanMonitor, {}
        answ, q_ids, accs = [], [], []
    acc_tracker = tracker.track('{}_acc'.format(prefix), tracker_class(**tracker_params))
    loss_tracker = tracker.track('{}_loss'.format(prefix), tracker_class(**tracker_params))

    for i, (v, b, q, a, qid) in enumerate(loader):
        pred, _ = model(v, b, q, a)
        if has_answers:
            loss = binary_cross_entropy_with_logits(pred, a, True)
            acc = compute_score_with_logits(pred, a.data)
        if train:
            # optimze parameters
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            optimizer.zero_grad()

        if has_answers:
            loss_tracker.append(loss.item())
            acc_tracker.append(acc.mean())
            fmt = '{:.4f}'.format
            print('{} E{:03d}'.format(prefix, epoch), 'loss', fmt(loss_tracker.mean.value),
                  'acc', fmt(acc_tracker.mean.value))


# ---- main.py ----
def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--model', type=str, default='baseline')
    parser.add_argument('--output', type=str, default='baseline')
    parser.add_argument('--resume', action='store_true', help='resumed flag')
    parser.add_argument('--test', dest='test_only', action='store_true')
    parser.add_argument('--batch_size', type=int, default=4)
    parser.add_argument('--seed', type=int, default=3, help='random seed')
    parser.add_argument('--gpu', default='0', help='the chosen gpu id')
    args = parser.parse_args([])
    return args


def seed_torch(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)
    print("seed: ", seed)


if __name__ == '__main__':
    args = parse_args()
    seed_torch(args.seed)

    # random features instead of the VQA v2 loader and the GloVe init
    num_ans_candidates, ntoken, n_objs = 10, 20, 5
    train_loader = [
        (torch.randn(args.batch_size, n_objs, config.output_features), torch.randn(args.batch_size, n_objs, 6),
         torch.randint(0, ntoken, (args.batch_size, 7)), (torch.rand(args.batch_size, num_ans_candidates) > 0.8).float(),
         torch.arange(args.batch_size))
        for _ in range(2)
    ]
    embeddings = np.random.randn(ntoken + 1, 12).astype(np.float32)
    model = build_baseline(embeddings, num_ans_candidates)
    optimizer = optim.Adamax(model.parameters())

    start_epoch = 0
    tracker = Tracker()

    for epoch in range(start_epoch, config.epochs):
        if not args.test_only:
            run(model, train_loader, optimizer, tracker, train=True, prefix='train', epoch=epoch)
