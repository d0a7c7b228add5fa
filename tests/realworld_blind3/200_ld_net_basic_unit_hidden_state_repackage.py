"""LD-Net's language model (BasicUnit, the stacked LSTM that keeps its hidden state on the module from one batch to the next) with the hidden state kept as the LSTM returned it instead of through repackage_hidden, as the issue asks why the detach is there; the second batch's backward runs into the first batch's freed graph."""
# outcome: retention-error
# source: https://github.com/LiyuanLucasLiu/LD-Net/issues/6
# repo: LiyuanLucasLiu/LD-Net
# category: iteration
# twin: 201_ld_net_basic_unit_hidden_state_repackage_fixed.py
# LD-Net's model_word_ada (utils, basic, adaptive, LM) and the train_lm.py loop with --rnn_layer
# Basic; the 1-billion-word loader is a random-corpus stand-in.
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


# ---- model_word_ada/utils.py ----
def repackage_hidden(h):
    """
    Wraps hidden states in new Variables, to detach them from their history

    Parameters
    ----------
    h : ``Tuple`` or ``Tensors``, required.
        Tuple or Tensors, hidden states.

    Returns
    -------
    hidden: ``Tuple`` or ``Tensors``.
        detached hidden states
    """
    if type(h) == torch.Tensor:
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)

def to_scalar(var):
    """
    convert a tensor to a scalar number
    """
    return var.view(-1).item()

def init_embedding(input_embedding):
    """
    random initialize embedding
    """
    bias = np.sqrt(3.0 / input_embedding.size(1))
    nn.init.uniform_(input_embedding, -bias, bias)

def init_lstm(input_lstm):
    """
    random initialize lstms
    """
    for ind in range(0, input_lstm.num_layers):
        weight = eval('input_lstm.weight_ih_l'+str(ind))
        bias = np.sqrt(6.0 / (weight.size(0)/4 + weight.size(1)))
        nn.init.uniform_(weight, -bias, bias)
        weight = eval('input_lstm.weight_hh_l'+str(ind))
        bias = np.sqrt(6.0 / (weight.size(0)/4 + weight.size(1)))
        nn.init.uniform_(weight, -bias, bias)
    
    if input_lstm.bias:
        for ind in range(0, input_lstm.num_layers):
            weight = eval('input_lstm.bias_ih_l'+str(ind))
            weight.data.zero_()
            weight.data[input_lstm.hidden_size: 2 * input_lstm.hidden_size] = 1
            weight = eval('input_lstm.bias_hh_l'+str(ind))
            weight.data.zero_()
            weight.data[input_lstm.hidden_size: 2 * input_lstm.hidden_size] = 1


# ---- model_word_ada/basic.py ----
class BasicUnit(nn.Module):
    """
    The basic recurrent unit for the vanilla stacked RNNs.
    """
    def __init__(self, unit, input_dim, hid_dim, droprate):
        super(BasicUnit, self).__init__()

        self.unit_type = unit
        rnnunit_map = {'rnn': nn.RNN, 'lstm': nn.LSTM, 'gru': nn.GRU}

        self.batch_norm = (unit == 'bnlstm')

        self.layer = rnnunit_map[unit](input_dim, hid_dim, 1)
        self.droprate = droprate

        self.output_dim = hid_dim

        self.init_hidden()

    def init_hidden(self):
        """
        Initialize hidden states.
        """
        self.hidden_state = None

    def rand_ini(self):
        """
        Random Initialization.
        """
        if not self.batch_norm:
            init_lstm(self.layer)

    def forward(self, x):
        """
        Calculate the output.
        """
        out, new_hidden = self.layer(x, self.hidden_state)  # error: IPL004

        self.hidden_state = new_hidden
        
        if self.droprate > 0:
            out = F.dropout(out, p=self.droprate, training=self.training)

        return out

class BasicRNN(nn.Module):
    """
    The multi-layer recurrent networks for the vanilla stacked RNNs.
    """
    def __init__(self, layer_num, unit, emb_dim, hid_dim, droprate):
        super(BasicRNN, self).__init__()

        layer_list = [BasicUnit(unit, emb_dim, hid_dim, droprate)] + [BasicUnit(unit, hid_dim, hid_dim, droprate) for i in range(layer_num - 1)]
        self.layer = nn.Sequential(*layer_list)
        self.output_dim = layer_list[-1].output_dim
        self.unit_type = unit
        
        self.init_hidden()

    def init_hidden(self):
        """
        Initialize hidden states.
        """
        for tup in self.layer.children():
            tup.init_hidden()

    def rand_ini(self):
        """
        Random Initialization.
        """
        for tup in self.layer.children():
            tup.rand_ini()

    def forward(self, x):
        return self.layer(x)


# ---- model_word_ada/adaptive.py ----
class AdaptiveSoftmax(nn.Module):
    """
    The adaptive softmax layer.
    """
    def __init__(self, input_size, cutoff):
        super().__init__()

        self.input_size = input_size
        self.cutoff = cutoff
        self.output_size = cutoff[0] + len(cutoff) - 1

        self.head = nn.Linear(input_size, self.output_size)
        self.tail = nn.ModuleList()

        self.cross_entropy = nn.CrossEntropyLoss(reduction='sum')

        for i in range(len(self.cutoff) - 1):
            seq = nn.Sequential(
                nn.Linear(input_size, input_size // 4 ** i, False),
                nn.Linear(input_size // 4 ** i, cutoff[i + 1] - cutoff[i], False)
            )

            self.tail.append(seq)

    def rand_ini(self):
        """
        Random Initialization.
        """
        nn.init.xavier_normal_(self.head.weight)

        for tail in self.tail:
            nn.init.xavier_normal_(tail[0].weight)
            nn.init.xavier_normal_(tail[1].weight)

    def forward(self, w_in, target):
        """
        Calculate the log-likihood w.o. calculate the full distribution.
        """
        batch_size = w_in.size(0)
        output = 0.0

        first_target = target.clone()

        for i in range(len(self.cutoff) - 1):
            
            mask = target.ge(self.cutoff[i]).mul(target.lt(self.cutoff[i + 1]))

            if mask.sum() > 0:

                first_target[mask] = self.cutoff[0] + i

                second_target = target[mask].add(-self.cutoff[i])
                second_input = w_in.index_select(0, mask.nonzero().squeeze())

                second_output = self.tail[i](second_input)

                output += self.cross_entropy(second_output, second_target)

        output += self.cross_entropy(self.head(w_in), first_target)
        output /= batch_size
        return output


# ---- model_word_ada/LM.py ----
class LM(nn.Module):
    """
    The language model model.
    """

    def __init__(self, rnn, soft_max, w_num, w_dim, droprate, label_dim = -1, add_relu=False):
        super(LM, self).__init__()

        self.rnn = rnn
        self.soft_max = soft_max

        self.w_num = w_num
        self.w_dim = w_dim
        self.word_embed = nn.Embedding(w_num, w_dim)

        self.rnn_output = self.rnn.output_dim

        self.add_proj = label_dim > 0
        if self.add_proj:
            self.project = nn.Linear(self.rnn_output, label_dim)
            if add_relu:
                self.relu = nn.ReLU()
            else:
                self.relu = lambda x: x

        self.drop = nn.Dropout(p=droprate)

    def rand_ini(self):
        """
        Random initialization.
        """
        self.rnn.rand_ini()
        self.soft_max.rand_ini()
        init_embedding(self.word_embed.weight)

    def init_hidden(self):
        """
        Initialize hidden states.
        """
        self.rnn.init_hidden()

    def forward(self, w_in, target):
        w_emb = self.word_embed(w_in)
        
        w_emb = self.drop(w_emb)

        out = self.rnn(w_emb).contiguous().view(-1, self.rnn_output)

        if self.add_proj:
            out = self.drop(self.relu(self.project(out)))

        out = self.soft_max(out, target)

        return out


# ---- model_word_ada/dataset.py (stand-in: LargeDataset over a random corpus) ----
class LargeDataset(object):
    def __init__(self, w_num, batch_size, sequence_length, n_batches=3):
        corpus = torch.randint(0, w_num, (sequence_length * n_batches + 1, batch_size))
        self.batches = [
            (corpus[i * sequence_length:(i + 1) * sequence_length],
             corpus[i * sequence_length + 1:(i + 1) * sequence_length + 1])
            for i in range(n_batches)
        ]
        self.cur_idx = 0

    def get_tqdm(self, device):
        self.cur_idx = 0
        for word_t, label_t in self.batches:
            self.cur_idx += 1
            yield word_t.to(device), label_t.to(device)


# ---- train_lm.py (--rnn_layer Basic, sizes shrunk) ----
if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cpu")
    w_num, batch_size, sequence_length = 50, 4, 5
    layer_num, rnn_unit, word_dim, hid_dim, droprate = 2, 'lstm', 8, 8, 0.01
    label_dim, clip, lr = 8, 5, 0.001
    cut_off = [20, 40] + [w_num + 1]

    train_loader = LargeDataset(w_num, batch_size, sequence_length)

    rnn_layer = BasicRNN(layer_num, rnn_unit, word_dim, hid_dim, droprate)
    soft_max = AdaptiveSoftmax(label_dim, cut_off)
    lm_model = LM(rnn_layer, soft_max, w_num, word_dim, droprate, label_dim = label_dim)
    lm_model.rand_ini()

    optimizer = optim.Adam(lm_model.parameters(), lr=lr)
    lm_model.to(device)

    batch_index = 0
    epoch_loss = 0
    for indexs in range(1):
        lm_model.train()

        for word_t, label_t in train_loader.get_tqdm(device):

            if 1 == train_loader.cur_idx:
                lm_model.init_hidden()

            label_t = label_t.view(-1)

            lm_model.zero_grad()
            loss = lm_model(word_t, label_t)
            
            loss.backward()
            torch.nn.utils.clip_grad_norm_(lm_model.parameters(), clip)
            optimizer.step()

            batch_index += 1
            epoch_loss += to_scalar(loss)
        print('train ppl', math.exp(epoch_loss / batch_index))
