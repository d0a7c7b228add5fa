"""FedDCSR's VGSAN: the Encoder runs two SelfAttention stacks (mu and logvar) on the same `seqs`; each starts with `seqs *= ~timeline_mask.unsqueeze(-1)`, so the logvar stack's mask rewrites the tensor the mu stack's first LayerNorm saved."""
# outcome: inplace-error
# source: https://github.com/orion-orion/FedDCSR/issues/3
# repo: orion-orion/FedDCSR
# category: residual
# twin: 604_feddcsr_vgsan_self_attention_seqs_imul_fixed.py
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- models/vgsan/config.py (hidden size shrunk) ----
class config:
    hidden_size = 16  # Lantent dim
    num_heads = 4  # Number of self-attention heads
    num_blocks = 2  # Number of self-attention blocks
    num_gnn_layers = 1  # GNN depth
    dropout_rate = 0.3  # Dropout rate p
    leakey = 0.1  # Hyperparameter of LeakyReLU
    hidden_act = "relu"  # Hidden layer activation function


# ---- models/vgsan/modules.py ----
def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def swish(x):
    return x * torch.sigmoid(x)


ACT2FN = {"gelu": gelu, "relu": F.relu, "swish": swish}


class PointWiseFeedForward(nn.Module):
    def __init__(self, hidden_units, dropout_rate):

        super(PointWiseFeedForward, self).__init__()

        self.conv1 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout1 = nn.Dropout(p=dropout_rate)
        if isinstance(config.hidden_act, str):
            self.feedforward_act_fn = ACT2FN[config.hidden_act]
        else:
            self.feedforward_act_fn = config.hidden_act
        self.conv2 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout2 = nn.Dropout(p=dropout_rate)

    def forward(self, inputs):
        outputs = self.feedforward_act_fn(
            self.dropout1(self.conv1(inputs.transpose(-1, -2))))
        outputs = self.dropout2(self.conv2(outputs))
        # As Conv1D requires (N, C, Length)
        outputs = outputs.transpose(-1, -2)
        outputs += inputs
        return outputs


class SelfAttention(nn.Module):
    def __init__(self, num_items, args):
        super(SelfAttention, self).__init__()
        self.num_items = num_items
        self.device = "cuda:%s" % args.gpu if args.cuda else "cpu"

        # To be Q for self-attention
        self.attention_layernorms = nn.ModuleList()
        self.attention_layers = nn.ModuleList()
        self.forward_layernorms = nn.ModuleList()
        self.forward_layers = nn.ModuleList()

        self.last_layernorm = nn.LayerNorm(config.hidden_size, eps=1e-8)

        for _ in range(config.num_blocks):
            new_attn_layernorm = nn.LayerNorm(config.hidden_size, eps=1e-8)
            self.attention_layernorms.append(new_attn_layernorm)

            new_attn_layer = nn.MultiheadAttention(config.hidden_size,
                                                   config.num_heads,
                                                   config.dropout_rate)
            self.attention_layers.append(new_attn_layer)

            new_fwd_layernorm = nn.LayerNorm(config.hidden_size, eps=1e-8)
            self.forward_layernorms.append(new_fwd_layernorm)

            new_fwd_layer = PointWiseFeedForward(
                config.hidden_size, config.dropout_rate)
            self.forward_layers.append(new_fwd_layer)

    def forward(self, seqs, seqs_data):
        timeline_mask = torch.BoolTensor(
            seqs_data.cpu() == self.num_items).to(self.device)
        seqs *= ~timeline_mask.unsqueeze(-1)  # Broadcast in the last dimension  # error: IPL001

        # Length of the time dimension for enforce causality
        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones(
            (tl, tl), dtype=torch.bool)).to(self.device)

        for i in range(len(self.attention_layers)):
            seqs = torch.transpose(seqs, 0, 1)
            Q = self.attention_layernorms[i](seqs)  # saved-by
            mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs,
                                                      attn_mask=attention_mask)
            # key_padding_mask=timeline_mask
            # need_weights=False)
            seqs = Q + mha_outputs
            seqs = torch.transpose(seqs, 0, 1)

            seqs = self.forward_layernorms[i](seqs)
            seqs = self.forward_layers[i](seqs)
            seqs *= ~timeline_mask.unsqueeze(-1)

        log_feats = self.last_layernorm(seqs)  # (U, T, C) -> (U, -1, C)

        return log_feats


# ---- models/vgsan/gnn.py ----
class GCNLayer(nn.Module):
    """GCN Module layer.
    """

    def __init__(self, args):
        super(GCNLayer, self).__init__()
        self.args = args
        self.dropout = config.dropout_rate
        self.layer_number = config.num_gnn_layers

        self.encoder = []
        for i in range(self.layer_number):
            self.encoder.append(GNN(
                nfeat=config.hidden_size,
                nhid=config.hidden_size,
                dropout=config.dropout_rate,
                alpha=config.leakey))

        self.encoder = nn.ModuleList(self.encoder)

    def forward(self, fea, adj):
        learn_fea = fea
        tmp_fea = fea
        for layer in self.encoder:
            learn_fea = F.dropout(learn_fea, self.dropout,
                                  training=self.training)
            learn_fea = layer(learn_fea, adj)
            tmp_fea = tmp_fea + learn_fea
        return tmp_fea / (self.layer_number + 1)


class GNN(nn.Module):
    def __init__(self, nfeat, nhid, dropout, alpha):
        super(GNN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.dropout = dropout
        self.leakyrelu = nn.LeakyReLU(alpha)

    def forward(self, x, adj):
        x = self.gc1(x, adj)
        return x


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(
            torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = input
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output


# ---- models/vgsan/vgsan_model.py ----
class Encoder(nn.Module):
    def __init__(self, num_items, args):
        super(Encoder, self).__init__()
        self.encoder_mu = SelfAttention(num_items, args)
        self.encoder_logvar = SelfAttention(num_items, args)

    def forward(self, seqs, seqs_data):
        mu = self.encoder_mu(seqs, seqs_data)
        logvar = self.encoder_logvar(seqs, seqs_data)
        return mu, logvar


class VGSAN(nn.Module):
    def __init__(self, num_items, args):
        super(VGSAN, self).__init__()
        self.device = "cuda:%s" % args.gpu if args.cuda else "cpu"

        self.item_emb = nn.Embedding(
            num_items + 1, config.hidden_size, padding_idx=num_items)
        self.pos_emb = nn.Embedding(args.max_seq_len, config.hidden_size)
        self.GNN_encoder = GCNLayer(args)

        self.encoder = Encoder(num_items, args)
        self.linear = nn.Linear(config.hidden_size, num_items)
        self.linear_pad = nn.Linear(config.hidden_size, 1)

        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(0.3)

    def my_index_select_embedding(self, memory, index):
        tmp = list(index.size()) + [-1]
        index = index.view(-1)
        ans = memory(index)
        ans = ans.view(tmp)
        return ans

    def my_index_select(self, memory, index):
        tmp = list(index.size()) + [-1]
        index = index.view(-1)
        ans = torch.index_select(memory, 0, index)
        ans = ans.view(tmp)
        return ans

    def graph_convolution(self, adj):
        self.item_index = torch.arange(
            0, self.item_emb.num_embeddings, 1).to(self.device)
        fea = self.my_index_select_embedding(self.item_emb, self.item_index)
        self.item_graph_embs = self.GNN_encoder(fea, adj)

    def add_position_embedding(self, seqs, seq_embeddings):
        seq_length = seqs.size(1)
        position_ids = torch.arange(
            seq_length, dtype=torch.long, device=seqs.device)
        position_ids = position_ids.unsqueeze(0).expand_as(seqs)
        position_embeddings = self.pos_emb(position_ids)
        seq_embeddings += position_embeddings
        seq_embeddings = self.LayerNorm(seq_embeddings)
        seq_embeddings = self.dropout(seq_embeddings)
        return seq_embeddings  # (batch_size, seq_len, hidden_size)

    def forward(self, seqs):
        seqs_emb = self.my_index_select(
            self.item_graph_embs, seqs) + self.item_emb(seqs)
        seqs_emb *= self.item_emb.embedding_dim ** 0.5
        seqs_emb = self.add_position_embedding(seqs, seqs_emb)

        mu, logvar = self.encoder(seqs_emb, seqs)
        z = self.reparameterization(mu, logvar)

        result = self.linear(z)
        result_pad = self.linear_pad(z)
        if self.training:
            return torch.cat((result, result_pad), dim=-1), mu, logvar
        else:
            return torch.cat((result, result_pad), dim=-1)

    def reparameterization(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        if self.training:
            eps = torch.randn_like(std)
            res = mu + std * eps
        else:
            res = mu
        return res


# ---- trainer.py (the VGSAN branch) ----
class ModelTrainer(object):
    def __init__(self, args, num_items, max_seq_len):
        self.args = args
        self.method = args.method
        self.device = "cuda:%s" % args.gpu if args.cuda else "cpu"
        self.model = VGSAN(num_items, args).to(self.device)
        self.cs_criterion = nn.CrossEntropyLoss(
            reduction="none").to(self.device)
        self.params = list(self.model.parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=args.lr)
        self.step = 0

    def train_batch(self, sessions, adj, num_items, args, global_params=None):
        self.optimizer.zero_grad()

        if "VGSAN" in self.method:
            self.model.graph_convolution(adj)

        sessions = [torch.LongTensor(x).to(self.device) for x in sessions]

        seq, ground, ground_mask = sessions
        result, mu, logvar = self.model(seq)
        loss = self.vgsan_loss_fn(
            result, mu, logvar, ground, ground_mask, num_items, self.step)

        loss.backward()
        self.optimizer.step()
        self.step += 1
        return loss.item()

    def vgsan_loss_fn(self, result, mu, logvar, ground, ground_mask, num_items,
                      step):
        recons_loss = self.cs_criterion(
            result.reshape(-1, num_items + 1),
            ground.reshape(-1))  # (batch_size * seq_len, )
        recons_loss = (recons_loss * (ground_mask.reshape(-1))).mean()

        kld_loss = -0.5 * torch.sum(1 + logvar -
                                    mu ** 2 - logvar.exp(), dim=-1).reshape(-1)
        kld_loss = (kld_loss * (ground_mask.reshape(-1))).mean()

        kld_weight = self.kl_anneal_function(
            self.args.anneal_cap, step, self.args.total_annealing_step)

        loss = recons_loss + kld_weight * kld_loss
        return loss

    def kl_anneal_function(self, anneal_cap, step, total_annealing_step):
        return min(anneal_cap, step / total_annealing_step)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--method", type=str, default="FedVGSAN")
    parser.add_argument("--cuda", action="store_true", default=False)
    parser.add_argument("--gpu", type=str, default="0")
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--max_seq_len", type=int, default=8)
    parser.add_argument("--anneal_cap", type=float, default=1.0)
    parser.add_argument("--total_annealing_step", type=int, default=10000)
    parser.add_argument("--mu", type=float, default=0)
    args = parser.parse_args([])

    num_items, batch_size = 20, 4
    trainer = ModelTrainer(args, num_items, args.max_seq_len)
    # a random item-item graph and random padded sessions instead of the Amazon domains
    adj = torch.eye(num_items + 1).to_sparse()
    for step in range(2):
        seq = np.random.randint(0, num_items + 1, (batch_size, args.max_seq_len))
        ground = np.random.randint(0, num_items, (batch_size, args.max_seq_len))
        ground_mask = (seq != num_items).astype(np.int64)
        loss = trainer.train_batch([seq, ground, ground_mask], adj, num_items, args)
        print("step", step, "loss", loss)
