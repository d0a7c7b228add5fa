"""fast-transformers RecurrentLinearAttention: the memory `[Si, Zi]` returned at one step is updated with `Zi += K` / `Si += ...` at the next, writing into the state the previous step's einsum saved, once a recurrent encoder is trained step by step."""
# outcome: inplace-error
# source: https://github.com/idiap/fast-transformers/pull/10
# repo: idiap/fast-transformers
# category: iteration
# twin: 435_fast_transformers_recurrent_linear_memory_iadd_fixed.py
import torch
from torch.nn import Dropout, LayerNorm, Linear, Module, ModuleList
import torch.nn.functional as F


# ---- fast_transformers/recurrent/attention/linear_attention.py ----
def elu_feature_map(x):
    return torch.nn.functional.elu(x) + 1


class RecurrentLinearAttention(Module):
    """Implement fast_transformers.attention.causal_linear_attention as a
    fixed-dimensional state recurrent model.
    """
    def __init__(self, feature_map=None, eps=1e-6):
        super(RecurrentLinearAttention, self).__init__()
        self.feature_map = feature_map or elu_feature_map
        self.eps = eps

    def forward(self, query, key, value, memory=None):
        # Apply the feature map to the query and key
        Q = self.feature_map(query)
        K = self.feature_map(key)

        # Extract some shapes
        N, H, D = Q.shape
        _, _, M = value.shape

        # Extract the memory or initialize it
        if memory is None:
            Si = query.new_zeros((N, H, D, M))
            Zi = query.new_zeros((N, H, D))
        else:
            Si, Zi = memory

        # Ensure the batch size did not change
        if len(Si) != N:
            raise ValueError("The batch size changed during iteration")

        # Update the internal state
        Zi += K  # error: IPL001
        Si += torch.einsum("nhd,nhm->nhdm", K, value)  # error: IPL001

        # Compute the output
        Z = 1. / (torch.einsum("nhd,nhd->nh", Q, Zi) + self.eps)
        V = torch.einsum("nhd,nhdm,nh->nhm", Q, Si, Z)  # saved-by

        return V, [Si, Zi]


# ---- fast_transformers/recurrent/attention/attention_layer.py ----
class RecurrentAttentionLayer(Module):
    def __init__(self, attention, d_model, n_heads, d_keys=None,
                 d_values=None):
        super(RecurrentAttentionLayer, self).__init__()

        # Fill d_keys and d_values
        d_keys = d_keys or (d_model//n_heads)
        d_values = d_values or (d_model//n_heads)

        self.inner_attention = attention
        self.query_projection = Linear(d_model, d_keys * n_heads)
        self.key_projection = Linear(d_model, d_keys * n_heads)
        self.value_projection = Linear(d_model, d_values * n_heads)
        self.out_projection = Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, query, key, value, memory=None):
        # Project the queries/keys/values
        query = self.query_projection(query)
        key = self.key_projection(key)
        value = self.value_projection(value)

        # Reshape them into many heads and compute the attention
        N, D = query.shape
        H = self.n_heads
        new_value, memory = self.inner_attention(
            query.view(N, H, -1),
            key.view(N, H, -1),
            value.view(N, H, -1),
            memory
        )
        new_value = new_value.view(N, -1)

        # Project the output and return
        return self.out_projection(new_value), memory


# ---- fast_transformers/recurrent/transformers.py ----
class RecurrentTransformerEncoderLayer(Module):
    def __init__(self, attention, d_model, n_heads, d_ff=None, dropout=0.1,
                 activation="relu"):
        super(RecurrentTransformerEncoderLayer, self).__init__()
        d_ff = d_ff or 4*d_model
        self.attention = attention
        self.linear1 = Linear(d_model, d_ff)
        self.linear2 = Linear(d_ff, d_model)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, memory=None):
        # Run the self attention and add it to the input
        x2, memory = self.attention(x, x, x, memory)
        x = x + self.dropout(x2)

        # Run the fully connected part of the layer
        y = x = self.norm1(x)
        y = self.dropout(self.activation(self.linear1(y)))
        y = self.dropout(self.linear2(y))

        return self.norm2(x+y), memory


class RecurrentTransformerEncoder(Module):
    def __init__(self, layers, norm_layer=None):
        super(RecurrentTransformerEncoder, self).__init__()
        self.layers = ModuleList(layers)
        self.norm = norm_layer

    def forward(self, x, memory=None):
        # Initialize the memory to None if not given
        if memory is None:
            memory = [None]*len(self.layers)

        # Apply all the transformers
        for i, layer in enumerate(self.layers):
            x, m = layer(x, memory[i])
            memory[i] = m

        # Apply the normalization if needed
        if self.norm is not None:
            x = self.norm(x)

        return x, memory


if __name__ == "__main__":
    # the PR's use: the recurrent encoder's outputs chained into other modules and trained
    d_model, n_heads, n_layers, vocab = 32, 4, 2, 11
    transformer = RecurrentTransformerEncoder([
        RecurrentTransformerEncoderLayer(
            RecurrentAttentionLayer(RecurrentLinearAttention(), d_model, n_heads),
            d_model, n_heads)
        for _ in range(n_layers)
    ])
    embedding = torch.nn.Embedding(vocab, d_model)
    head = Linear(d_model, vocab)
    params = list(transformer.parameters()) + list(embedding.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    for step in range(2):
        tokens = torch.randint(0, vocab, (4, 6))
        memory = None
        logits = []
        for t in range(tokens.shape[1] - 1):
            y, memory = transformer(embedding(tokens[:, t]), memory)
            logits.append(head(y))
        logits = torch.stack(logits, 1)
        loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
