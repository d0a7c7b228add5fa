"""transformers DebertaEmbeddings, fixed as in PR #35898: the position and token-type embeddings are added out of place, `embeddings = embeddings + position_embeddings`."""
# outcome: ok
# source: https://github.com/huggingface/transformers/pull/35898
# repo: huggingface/transformers
# category: leaf
# twin: 310_deberta_embeddings_iadd_input_require_grads.py
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.utils.checkpoint
from torch import nn
from torch.nn import CrossEntropyLoss


# stand-in for transformers' config / PreTrainedModel hooks (the parts the PR's script relies on)
@dataclass
class DebertaConfig:
    vocab_size: int = 50
    hidden_size: int = 32
    num_hidden_layers: int = 5
    num_attention_heads: int = 4
    intermediate_size: int = 37
    hidden_dropout_prob: float = 0.1
    max_position_embeddings: int = 64
    type_vocab_size: int = 0
    layer_norm_eps: float = 1e-7
    relative_attention: bool = True
    position_biased_input: bool = True
    pad_token_id: int = 0
    num_labels: int = 2
    pooler_hidden_size: int = 32


class PreTrainedModel(nn.Module):
    supports_gradient_checkpointing = True

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        for module in self.modules():
            if isinstance(module, DebertaEncoder):
                module.gradient_checkpointing = True


# stand-in for peft's get_peft_model / LoraConfig (not installed here): freeze the base model,
# LoRA adapters on the attention projections, the classifier head trainable (modules_to_save)
@dataclass
class LoraConfig:
    task_type: str = "SEQ_CLS"
    inference_mode: bool = False
    r: int = 8
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    target_modules: tuple = ("in_proj",)


class LoraLinear(nn.Module):
    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.lora_dropout = nn.Dropout(dropout)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


def get_peft_model(model, peft_config):
    for p in model.parameters():
        p.requires_grad = False
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if name in peft_config.target_modules and isinstance(child, nn.Linear):
                setattr(module, name, LoraLinear(child, peft_config.r, peft_config.lora_alpha, peft_config.lora_dropout))
    for p in model.classifier.parameters():
        p.requires_grad = True
    return model


# ---- src/transformers/models/deberta/modeling_deberta.py (attention simplified) ----
class DebertaLayerNorm(nn.Module):
    """LayerNorm module in the TF style (epsilon inside the square root)."""

    def __init__(self, size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_type = hidden_states.dtype
        hidden_states = hidden_states.float()
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) / torch.sqrt(variance + self.variance_epsilon)
        hidden_states = hidden_states.to(input_type)
        y = self.weight * hidden_states + self.bias
        return y


class StableDropout(nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.training and self.drop_prob > 0:
            return nn.functional.dropout(x, self.drop_prob, True)
        return x


class DisentangledSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.in_proj = nn.Linear(config.hidden_size, self.all_head_size * 3, bias=False)
        self.dropout = StableDropout(config.hidden_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, -1)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        qp = self.in_proj(hidden_states)
        query_layer, key_layer, value_layer = self.transpose_for_scores(qp).chunk(3, dim=-1)
        scale = math.sqrt(query_layer.size(-1))
        attention_scores = torch.matmul(query_layer / scale, key_layer.transpose(-1, -2))
        attention_scores = attention_scores.masked_fill(attention_mask == 0, torch.finfo(attention_scores.dtype).min)
        attention_probs = self.dropout(torch.softmax(attention_scores, -1))
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (-1,))


class DebertaLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = DisentangledSelfAttention(config)
        self.attention_output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_norm = DebertaLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_norm = DebertaLayerNorm(config.hidden_size, config.layer_norm_eps)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention_norm(self.attention_output(self.attention(hidden_states, attention_mask)) + hidden_states)
        intermediate_output = nn.functional.gelu(self.intermediate(attention_output))
        return self.output_norm(self.output(intermediate_output) + attention_output)


class DebertaEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([DebertaLayer(config) for _ in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def get_attention_mask(self, attention_mask):
        if attention_mask.dim() <= 2:
            extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
            attention_mask = extended_attention_mask * extended_attention_mask.squeeze(-2).unsqueeze(-1)
            attention_mask = attention_mask.byte()
        elif attention_mask.dim() == 3:
            attention_mask = attention_mask.unsqueeze(1)

        return attention_mask

    def forward(self, hidden_states, attention_mask):
        attention_mask = self.get_attention_mask(attention_mask)
        for i, layer_module in enumerate(self.layer):
            if self.gradient_checkpointing and self.training:
                hidden_states = torch.utils.checkpoint.checkpoint(
                    layer_module, hidden_states, attention_mask, use_reentrant=True
                )
            else:
                hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class DebertaEmbeddings(nn.Module):
    """Construct the embeddings from word, position and token_type embeddings."""

    def __init__(self, config):
        super().__init__()
        pad_token_id = getattr(config, "pad_token_id", 0)
        self.embedding_size = getattr(config, "embedding_size", config.hidden_size)
        self.word_embeddings = nn.Embedding(config.vocab_size, self.embedding_size, padding_idx=pad_token_id)

        self.position_biased_input = getattr(config, "position_biased_input", True)
        if not self.position_biased_input:
            self.position_embeddings = None
        else:
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, self.embedding_size)

        if config.type_vocab_size > 0:
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, self.embedding_size)

        if self.embedding_size != config.hidden_size:
            self.embed_proj = nn.Linear(self.embedding_size, config.hidden_size, bias=False)
        self.LayerNorm = DebertaLayerNorm(config.hidden_size, config.layer_norm_eps)
        self.dropout = StableDropout(config.hidden_dropout_prob)
        self.config = config

        # position_ids (1, len position emb) is contiguous in memory and exported when serialized
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, mask=None, inputs_embeds=None):
        if input_ids is not None:
            input_shape = input_ids.size()
        else:
            input_shape = inputs_embeds.size()[:-1]

        seq_length = input_shape[1]

        if position_ids is None:
            position_ids = self.position_ids[:, :seq_length]

        if token_type_ids is None:
            token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=self.position_ids.device)

        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)

        if self.position_embeddings is not None:
            position_embeddings = self.position_embeddings(position_ids.long())
        else:
            position_embeddings = torch.zeros_like(inputs_embeds)

        embeddings = inputs_embeds
        if self.position_biased_input:
            embeddings = embeddings + position_embeddings
        if self.config.type_vocab_size > 0:
            token_type_embeddings = self.token_type_embeddings(token_type_ids)
            embeddings = embeddings + token_type_embeddings

        if self.embedding_size != self.config.hidden_size:
            embeddings = self.embed_proj(embeddings)

        embeddings = self.LayerNorm(embeddings)

        if mask is not None:
            if mask.dim() != embeddings.dim():
                if mask.dim() == 4:
                    mask = mask.squeeze(1).squeeze(1)
                mask = mask.unsqueeze(2)
            mask = mask.to(embeddings.dtype)

            embeddings = embeddings * mask

        embeddings = self.dropout(embeddings)
        return embeddings


class DebertaModel(PreTrainedModel):
    def __init__(self, config):
        super().__init__()

        self.embeddings = DebertaEmbeddings(config)
        self.encoder = DebertaEncoder(config)
        self.config = config

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, inputs_embeds=None):
        input_shape = input_ids.size()
        device = input_ids.device

        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=device)

        embedding_output = self.embeddings(
            input_ids=input_ids,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            mask=attention_mask,
            inputs_embeds=inputs_embeds,
        )

        return self.encoder(embedding_output, attention_mask)


class ContextPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.pooler_hidden_size, config.pooler_hidden_size)
        self.dropout = StableDropout(config.hidden_dropout_prob)
        self.config = config

    def forward(self, hidden_states):
        # We "pool" the model by simply taking the hidden state corresponding
        # to the first token.

        context_token = hidden_states[:, 0]
        context_token = self.dropout(context_token)
        pooled_output = self.dense(context_token)
        pooled_output = nn.functional.gelu(pooled_output)
        return pooled_output


class DebertaForSequenceClassification(PreTrainedModel):
    def __init__(self, config):
        super().__init__()

        num_labels = getattr(config, "num_labels", 2)
        self.num_labels = num_labels
        self.config = config

        self.deberta = DebertaModel(config)
        self.pooler = ContextPooler(config)
        self.classifier = nn.Linear(config.pooler_hidden_size, num_labels)
        self.dropout = StableDropout(config.hidden_dropout_prob)

    def get_input_embeddings(self):
        return self.deberta.get_input_embeddings()

    def forward(self, input_ids=None, attention_mask=None, labels=None):
        encoder_layer = self.deberta(input_ids, attention_mask=attention_mask)
        pooled_output = self.pooler(encoder_layer)
        pooled_output = self.dropout(pooled_output)
        logits = self.classifier(pooled_output)

        loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            loss = loss_fct(logits.view(-1, self.num_labels), labels.view(-1))
        return loss, logits


# ---- the PR's reproduction script ----
# Create a minimal DeBERTa config for testing
config = DebertaConfig(
    hidden_size=32,
    num_hidden_layers=5,
    num_attention_heads=4,
    intermediate_size=37,
    relative_attention=True,
)

# PEFT model
model = DebertaForSequenceClassification(config)
peft_config = LoraConfig(task_type="SEQ_CLS", inference_mode=False, r=8, lora_alpha=32, lora_dropout=0.1)
model = get_peft_model(model, peft_config)
model.train()

# Enable input gradients
model.enable_input_require_grads()
model.gradient_checkpointing_enable()

device = torch.device("cpu")
model = model.to(device)

# Create dummy inputs
input_ids = torch.randint(1, config.vocab_size, (2, 10), device=device)
attention_mask = torch.ones_like(input_ids)
labels = torch.tensor([0, 1], device=device)

optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for step in range(2):
    loss, logits = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(step, loss.item())
