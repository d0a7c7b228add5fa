"""Chart2Text's XLM-style TransformerEncoder with create_sinusoidal_embeddings fixed as the XLM port in huggingface/transformers does it: `out.requires_grad = False` comes before the sin/cos slice writes, then `out.detach_()`; the encoder then trains a few steps."""
# outcome: ok
# source: https://github.com/JasonObeid/Chart2Text/issues/37
# repo: JasonObeid/Chart2Text
# category: leaf
# twin: 613_chart2text_sinusoidal_position_embeddings_leaf.py
import itertools
import math
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- model/src/model/transformer.py (the encoder path) ----
def Embedding(num_embeddings, embedding_dim, padding_idx=None):
    m = nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)
    nn.init.normal_(m.weight, mean=0, std=embedding_dim ** -0.5)
    if padding_idx is not None:
        nn.init.constant_(m.weight[padding_idx], 0)
    return m


def Linear(in_features, out_features, bias=True):
    m = nn.Linear(in_features, out_features, bias)
    return m


def create_sinusoidal_embeddings(n_pos, dim, out):
    position_enc = np.array([
        [pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
        for pos in range(n_pos)
    ])
    out.requires_grad = False
    out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    out.detach_()


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def get_masks(slen, lengths, causal):
    """
    Generate hidden states mask, and optionally an attention mask.
    """
    assert lengths.max().item() <= slen
    bs = lengths.size(0)
    alen = torch.arange(slen, dtype=torch.long, device=lengths.device)
    mask = alen < lengths[:, None]

    # attention mask is the same as mask, or triangular inferior attention (causal)
    if causal:
        attn_mask = alen[None, None, :].repeat(bs, slen, 1) <= alen[None, :, None]
    else:
        attn_mask = mask

    # sanity check
    assert mask.size() == (bs, slen)
    assert causal is False or attn_mask.size() == (bs, slen, slen)

    return mask, attn_mask


class BinaryOutputLayer(nn.Module):
    """
    0/1 Classification layer (binary classification).
    """
    def __init__(self, params):
        super().__init__()
        self.pad_index = params.pad_index
        dim = params.emb_dim
        self.proj = Linear(dim, 1, bias=True)
        self.proj_act = nn.Sigmoid()
        self.criterion = nn.BCELoss()

    def forward(self, x, y):
        scores = self.proj(x)
        scores = self.proj_act(scores)
        y = y.view_as(scores).float()
        loss = self.criterion(scores, y)
        return scores, loss


class MultiHeadAttention(nn.Module):

    NEW_ID = itertools.count()

    def __init__(self, n_heads, dim, dropout):
        super().__init__()
        self.layer_id = next(MultiHeadAttention.NEW_ID)
        self.dim = dim
        self.n_heads = n_heads
        self.dropout = dropout
        assert self.dim % self.n_heads == 0

        self.q_lin = Linear(dim, dim)
        self.k_lin = Linear(dim, dim)
        self.v_lin = Linear(dim, dim)
        self.out_lin = Linear(dim, dim)

    def forward(self, input, mask, kv=None, cache=None):
        bs, qlen, dim = input.size()
        if kv is None:
            klen = qlen if cache is None else cache['slen'] + qlen
        else:
            klen = kv.size(1)
        assert dim == self.dim, 'Dimensions do not match: %s input vs %s configured' % (dim, self.dim)
        n_heads = self.n_heads
        dim_per_head = dim // n_heads
        mask_reshape = (bs, 1, qlen, klen) if mask.dim() == 3 else (bs, 1, 1, klen)

        def shape(x):
            """  projection """
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(x):
            """  compute context """
            return x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q = shape(self.q_lin(input))                                          # (bs, n_heads, qlen, dim_per_head)
        if kv is None:
            k = shape(self.k_lin(input))                                      # (bs, n_heads, qlen, dim_per_head)
            v = shape(self.v_lin(input))                                      # (bs, n_heads, qlen, dim_per_head)
        elif cache is None or self.layer_id not in cache:
            k = v = kv
            k = shape(self.k_lin(k))                                          # (bs, n_heads, qlen, dim_per_head)
            v = shape(self.v_lin(v))                                          # (bs, n_heads, qlen, dim_per_head)

        q = q / math.sqrt(dim_per_head)                                       # (bs, n_heads, qlen, dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))                           # (bs, n_heads, qlen, klen)
        mask = (mask == 0).view(mask_reshape).expand_as(scores)               # (bs, n_heads, qlen, klen)
        scores.masked_fill_(mask, -float('inf'))                              # (bs, n_heads, qlen, klen)

        weights = F.softmax(scores.float(), dim=-1).type_as(scores)           # (bs, n_heads, qlen, klen)
        weights = F.dropout(weights, p=self.dropout, training=self.training)  # (bs, n_heads, qlen, klen)
        context = torch.matmul(weights, v)                                    # (bs, n_heads, qlen, dim_per_head)
        context = unshape(context)                                            # (bs, qlen, dim)

        return self.out_lin(context)


class TransformerFFN(nn.Module):

    def __init__(self, in_dim, dim_hidden, out_dim, dropout, gelu_activation):
        super().__init__()
        self.dropout = dropout
        self.lin1 = Linear(in_dim, dim_hidden)
        self.lin2 = Linear(dim_hidden, out_dim)
        self.act = gelu if gelu_activation else F.relu

    def forward(self, input):
        x = self.lin1(input)
        x = self.act(x)
        x = self.lin2(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        return x


class TransformerEncoder(nn.Module):

    def __init__(self, params, dico, with_output):
        """
        Transformer model (encoder or decoder).
        """
        super().__init__()

        self.with_output = with_output
        self.with_positional_emb = params.encoder_positional_emb

        self.n_words = params.src_n_words

        self.eos_index = params.eos_index
        self.pad_index = params.pad_index
        self.dico = dico
        assert len(self.dico) == self.n_words

        # model parameters
        self.emb_dim = params.emb_dim // 4  # 128 by default
        self.dim = params.emb_dim       # 512 by default
        self.hidden_dim = self.dim * 4  # 2048 by default
        self.n_heads = params.n_heads   # 8 by default
        self.n_layers = params.enc_n_layers
        self.dropout = params.dropout
        self.attention_dropout = params.attention_dropout
        assert self.dim % self.n_heads == 0, 'transformer dim must be a multiple of n_heads'

        # embeddings
        # TODO remove the hardcode number
        if params.encoder_positional_emb:
            self.position_embeddings = Embedding(800, self.dim)
            if params.sinusoidal_embeddings:
                create_sinusoidal_embeddings(800, self.dim, out=self.position_embeddings.weight)
        self.embeddings = Embedding(self.n_words, self.emb_dim, padding_idx=self.pad_index)
        self.layer_norm_emb = nn.LayerNorm(self.dim, eps=1e-12)

        # transformer layers
        self.attentions = nn.ModuleList()
        self.layer_norm1 = nn.ModuleList()
        self.ffns = nn.ModuleList()
        self.layer_norm2 = nn.ModuleList()

        for _ in range(self.n_layers):
            self.attentions.append(MultiHeadAttention(self.n_heads, self.dim, dropout=self.attention_dropout))
            self.layer_norm1.append(nn.LayerNorm(self.dim, eps=1e-12))
            self.ffns.append(TransformerFFN(self.dim, self.hidden_dim, self.dim, dropout=self.dropout, gelu_activation=params.gelu_activation))
            self.layer_norm2.append(nn.LayerNorm(self.dim, eps=1e-12))

        # output layer
        self.pred_layer = BinaryOutputLayer(params)

    def forward(self, mode, **kwargs):
        if mode == 'fwd':
            return self.fwd(**kwargs)
        elif mode == 'predict':
            return self.predict(**kwargs)
        else:
            raise Exception("Unknown mode: %s" % mode)

    def fwd(self, x1, x2, x3, x4, lengths):
        # check inputs
        slen, bs = x1.size()
        assert lengths.size(0) == bs
        assert lengths.max().item() <= slen
        x1 = self.embeddings(x1.transpose(0, 1))
        x2 = self.embeddings(x2.transpose(0, 1))
        x3 = self.embeddings(x3.transpose(0, 1))
        x4 = self.embeddings(x4.transpose(0, 1))

        # generate masks
        mask, attn_mask = get_masks(slen, lengths, causal=False)

        positions = x1.new(slen).long()
        positions = torch.arange(slen, out=positions).unsqueeze(0)

        # embeddings
        tensor = torch.cat((x1, x2, x3, x4), dim=-1)
        if self.with_positional_emb:
            tensor = tensor + self.position_embeddings(positions).expand_as(tensor)
        tensor = self.layer_norm_emb(tensor)
        tensor = F.dropout(tensor, p=self.dropout, training=self.training)
        tensor *= mask.unsqueeze(-1).to(tensor.dtype)

        # transformer layers
        for i in range(self.n_layers):

            # self attention
            attn = self.attentions[i](tensor, attn_mask)
            attn = F.dropout(attn, p=self.dropout, training=self.training)
            tensor = tensor + attn
            tensor = self.layer_norm1[i](tensor)

            # FFN
            tensor = tensor + self.ffns[i](tensor)
            tensor = self.layer_norm2[i](tensor)
            tensor *= mask.unsqueeze(-1).to(tensor.dtype)

        # move back sequence length to dimension 0
        tensor = tensor.transpose(0, 1)

        return tensor

    def predict(self, tensor, pred_mask, y):
        masked_tensor = tensor[pred_mask.unsqueeze(-1).expand_as(tensor)].view(-1, self.dim)
        scores, loss = self.pred_layer(masked_tensor, y)
        return scores, loss


if __name__ == '__main__':
    torch.manual_seed(0)
    # a tiny configuration instead of train.py's parsed arguments
    params = SimpleNamespace(encoder_positional_emb=True, sinusoidal_embeddings=True, src_n_words=20,
                             eos_index=1, pad_index=2, emb_dim=32, n_heads=4, enc_n_layers=2,
                             dropout=0.1, attention_dropout=0.1, gelu_activation=True)
    dico = ['w%d' % i for i in range(params.src_n_words)]
    encoder = TransformerEncoder(params, dico, with_output=True)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-4)

    # random (slen, bs) record fields instead of the Statista charts
    slen, bs = 6, 3
    for step in range(2):
        x1, x2, x3, x4 = (torch.randint(3, params.src_n_words, (slen, bs)) for _ in range(4))
        lengths = torch.tensor([6, 5, 4])
        pred_mask = (torch.arange(slen)[:, None] < lengths[None]).to(torch.bool)
        y = torch.randint(0, 2, (int(pred_mask.sum()),))
        enc = encoder('fwd', x1=x1, x2=x2, x3=x3, x4=x4, lengths=lengths)
        _, loss = encoder('predict', tensor=enc, pred_mask=pred_mask, y=y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
