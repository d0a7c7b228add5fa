"""Textual Inversion (rinongal): EmbeddingManager.forward overwrites the placeholder rows of the token-embedding output in place (`embedded_text[placeholder_idx] = placeholder_embedding`) before the positional embedding is added; only the placeholder Parameter is trained, a few steps on random prompts."""
# outcome: ok
# source: https://github.com/rinongal/textual_inversion/blob/main/ldm/modules/embedding_manager.py
# repo: rinongal/textual_inversion
# category: residual
import torch
from torch import nn
from functools import partial

DEFAULT_PLACEHOLDER_TOKEN = ["*"]

PROGRESSIVE_SCALE = 2000


# ---- stand-in for ldm.modules.encoders.modules.BERTTokenizer (no download): word -> id, [CLS] w.. [SEP], padded with 0 ----
class BERTTokenizer:
    vocab = {"[CLS]": 1, "[SEP]": 2, "*": 3, "a": 4, "photo": 5, "of": 6, "cat": 7, "painting": 8, "in": 9, "style": 10, "the": 11}

    def __init__(self, vq_interface=False, max_length=77):
        self.max_length = max_length

    def __call__(self, text):
        if isinstance(text, str):
            text = [text]
        out = torch.zeros(len(text), self.max_length, dtype=torch.long)
        for i, t in enumerate(text):
            ids = [1] + [self.vocab[w] for w in t.split()] + [2]
            out[i, :len(ids)] = torch.tensor(ids)
        return out


# ---- ldm/modules/x_transformer.py (AttentionLayers cut to one pre-norm attention + feed-forward block) ----
def exists(val):
    return val is not None


def default(val, d):
    if exists(val):
        return val
    return d() if callable(d) else d


def always(val):
    def inner(*args, **kwargs):
        return val
    return inner


class AbsolutePositionalEmbedding(nn.Module):
    def __init__(self, dim, max_seq_len):
        super().__init__()
        self.emb = nn.Embedding(max_seq_len, dim)
        self.init_()

    def init_(self):
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x):
        n = torch.arange(x.shape[1], device=x.device)
        return self.emb(n)[None, :, :]


class AttentionLayers(nn.Module):
    def __init__(self, dim, depth, heads=2):
        super().__init__()
        self.dim = dim
        self.depth = depth
        self.has_pos_emb = False
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                nn.LayerNorm(dim), nn.MultiheadAttention(dim, heads, batch_first=True),
                nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim)),
            ]))

    def forward(self, x, mask=None, **kwargs):
        for norm1, attn, norm2, ff in self.layers:
            h = norm1(x)
            x = attn(h, h, h, need_weights=False)[0] + x
            x = ff(norm2(x)) + x
        return x


class Encoder(AttentionLayers):
    pass


class TransformerWrapper(nn.Module):
    def __init__(
            self,
            *,
            num_tokens,
            max_seq_len,
            attn_layers,
            emb_dim=None,
            max_mem_len=0.,
            emb_dropout=0.,
            num_memory_tokens=None,
            tie_embedding=False,
            use_pos_emb=True
    ):
        super().__init__()
        assert isinstance(attn_layers, AttentionLayers), 'attention layers must be one of Encoder or Decoder'

        dim = attn_layers.dim
        emb_dim = default(emb_dim, dim)

        self.max_seq_len = max_seq_len
        self.max_mem_len = max_mem_len
        self.num_tokens = num_tokens

        self.token_emb = nn.Embedding(num_tokens, emb_dim)
        self.pos_emb = AbsolutePositionalEmbedding(emb_dim, max_seq_len) if (
                    use_pos_emb and not attn_layers.has_pos_emb) else always(0)
        self.emb_dropout = nn.Dropout(emb_dropout)

        self.project_emb = nn.Linear(emb_dim, dim) if emb_dim != dim else nn.Identity()
        self.attn_layers = attn_layers
        self.norm = nn.LayerNorm(dim)

        self.init_()

        self.to_logits = nn.Linear(dim, num_tokens) if not tie_embedding else lambda t: t @ self.token_emb.weight.t()

        num_memory_tokens = default(num_memory_tokens, 0)
        self.num_memory_tokens = num_memory_tokens

    def init_(self):
        nn.init.normal_(self.token_emb.weight, std=0.02)

    def forward(
            self,
            x,
            return_embeddings=False,
            mask=None,
            return_mems=False,
            return_attn=False,
            mems=None,
            embedding_manager=None,
            **kwargs
    ):
        b, n, device, num_mem = *x.shape, x.device, self.num_memory_tokens

        embedded_x = self.token_emb(x)

        if embedding_manager:
            x = embedding_manager(x, embedded_x)
        else:
            x = embedded_x

        x = x + self.pos_emb(x)
        x = self.emb_dropout(x)

        x = self.project_emb(x)

        x = self.attn_layers(x, mask=mask, mems=mems, **kwargs)
        x = self.norm(x)

        out = self.to_logits(x) if not return_embeddings else x
        return out


# ---- ldm/modules/encoders/modules.py ----
class BERTEmbedder(nn.Module):
    """Uses the BERT tokenizr model and add some transformer encoder layers"""
    def __init__(self, n_embed, n_layer, vocab_size=30522, max_seq_len=77,
                 device="cuda", use_tokenizer=True, embedding_dropout=0.0):
        super().__init__()
        self.use_tknz_fn = use_tokenizer
        if self.use_tknz_fn:
            self.tknz_fn = BERTTokenizer(vq_interface=False, max_length=max_seq_len)
        self.device = device
        self.transformer = TransformerWrapper(num_tokens=vocab_size, max_seq_len=max_seq_len,
                                              attn_layers=Encoder(dim=n_embed, depth=n_layer),
                                              emb_dropout=embedding_dropout)

    def forward(self, text, embedding_manager=None):
        if self.use_tknz_fn:
            tokens = self.tknz_fn(text)
        else:
            tokens = text
        z = self.transformer(tokens, return_embeddings=True, embedding_manager=embedding_manager)
        return z

    def encode(self, text, **kwargs):
        return self(text, **kwargs)


# ---- ldm/modules/embedding_manager.py ----
def get_bert_token_for_string(tokenizer, string):
    token = tokenizer(string)
    assert torch.count_nonzero(token) == 3, f"String '{string}' maps to more than a single token. Please use another string"

    token = token[0, 1]

    return token


class EmbeddingManager(nn.Module):
    def __init__(
            self,
            embedder,
            placeholder_strings=None,
            initializer_words=None,
            per_image_tokens=False,
            num_vectors_per_token=1,
            progressive_words=False,
            token_dim=1280,
            **kwargs
    ):
        super().__init__()

        self.string_to_token_dict = {}

        self.string_to_param_dict = nn.ParameterDict()

        self.initial_embeddings = nn.ParameterDict()  # These should not be optimized

        self.progressive_words = progressive_words
        self.progressive_counter = 0

        self.max_vectors_per_token = num_vectors_per_token

        self.is_clip = False
        get_token_for_string = partial(get_bert_token_for_string, embedder.tknz_fn)
        get_embedding_for_tkn = embedder.transformer.token_emb

        for idx, placeholder_string in enumerate(placeholder_strings):

            token = get_token_for_string(placeholder_string)

            if initializer_words and idx < len(initializer_words):
                init_word_token = get_token_for_string(initializer_words[idx])

                with torch.no_grad():
                    init_word_embedding = get_embedding_for_tkn(init_word_token.cpu())

                token_params = torch.nn.Parameter(init_word_embedding.unsqueeze(0).repeat(num_vectors_per_token, 1), requires_grad=True)
                self.initial_embeddings[placeholder_string] = torch.nn.Parameter(init_word_embedding.unsqueeze(0).repeat(num_vectors_per_token, 1), requires_grad=False)
            else:
                token_params = torch.nn.Parameter(torch.rand(size=(num_vectors_per_token, token_dim), requires_grad=True))

            self.string_to_token_dict[placeholder_string] = token
            self.string_to_param_dict[placeholder_string] = token_params

    def forward(
            self,
            tokenized_text,
            embedded_text,
    ):
        b, n, device = *tokenized_text.shape, tokenized_text.device

        for placeholder_string, placeholder_token in self.string_to_token_dict.items():

            placeholder_embedding = self.string_to_param_dict[placeholder_string].to(device)

            if self.max_vectors_per_token == 1:  # If there's only one vector per token, we can do a simple replacement
                placeholder_idx = torch.where(tokenized_text == placeholder_token.to(device))
                embedded_text[placeholder_idx] = placeholder_embedding
            else:  # otherwise, need to insert and keep track of changing indices
                if self.progressive_words:
                    self.progressive_counter += 1
                    max_step_tokens = 1 + self.progressive_counter // PROGRESSIVE_SCALE
                else:
                    max_step_tokens = self.max_vectors_per_token

                num_vectors_for_token = min(placeholder_embedding.shape[0], max_step_tokens)

                placeholder_rows, placeholder_cols = torch.where(tokenized_text == placeholder_token.to(device))

                if placeholder_rows.nelement() == 0:
                    continue

                sorted_cols, sort_idx = torch.sort(placeholder_cols, descending=True)
                sorted_rows = placeholder_rows[sort_idx]

                for idx in range(len(sorted_rows)):
                    row = sorted_rows[idx]
                    col = sorted_cols[idx]

                    new_token_row = torch.cat([tokenized_text[row][:col], placeholder_token.repeat(num_vectors_for_token).to(device), tokenized_text[row][col + 1:]], axis=0)[:n]
                    new_embed_row = torch.cat([embedded_text[row][:col], placeholder_embedding[:num_vectors_for_token], embedded_text[row][col + 1:]], axis=0)[:n]

                    embedded_text[row] = new_embed_row
                    tokenized_text[row] = new_token_row

        return embedded_text

    def embedding_parameters(self):
        return self.string_to_param_dict.parameters()

    def embedding_to_coarse_loss(self):

        loss = 0.
        num_embeddings = len(self.initial_embeddings)

        for key in self.initial_embeddings:
            optimized = self.string_to_param_dict[key]
            coarse = self.initial_embeddings[key].clone().to(optimized.device)

            loss = loss + (optimized - coarse) @ (optimized - coarse).T / num_embeddings

        return loss


if __name__ == "__main__":
    # LatentDiffusion with a frozen BERT cond_stage_model, shrunk: only the embedding manager is optimized;
    # a random target on the conditioning stands in for the denoising loss.
    cond_stage_model = BERTEmbedder(n_embed=32, n_layer=2, vocab_size=16, max_seq_len=12, device="cpu")
    cond_stage_model.eval()
    for param in cond_stage_model.parameters():
        param.requires_grad = False
    for num_vectors in (1, 2):
        embedding_manager = EmbeddingManager(cond_stage_model, placeholder_strings=list(DEFAULT_PLACEHOLDER_TOKEN),
                                             initializer_words=["painting"], num_vectors_per_token=num_vectors)
        opt = torch.optim.AdamW(list(embedding_manager.embedding_parameters()), lr=5e-3)
        embedding_reg_weight = 0.1
        for step in range(3):
            c = cond_stage_model.encode(["a photo of *", "the cat in * style"], embedding_manager=embedding_manager)
            target = torch.randn_like(c)
            loss = torch.nn.functional.mse_loss(c, target)
            loss_embedding_reg = embedding_manager.embedding_to_coarse_loss().mean()
            loss = loss + embedding_reg_weight * loss_embedding_reg
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(num_vectors, step, loss.item())
