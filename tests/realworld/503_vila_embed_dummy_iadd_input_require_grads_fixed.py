"""VILA's LlavaMetaForCausalLM._embed, fixed as the PR does: the dummy vision embedding is folded in out of place, `text_embeds = text_embeds + torch.sum(dummy_embed) * 0`, so the embedding output made a grad-requiring leaf by `enable_input_require_grads` is not written."""
# outcome: ok
# source: https://github.com/NVlabs/VILA/pull/199
# repo: NVlabs/VILA
# category: leaf
# twin: 502_vila_embed_dummy_iadd_input_require_grads.py
import warnings
from abc import ABC
from collections import defaultdict, deque
from itertools import chain
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

IGNORE_INDEX = -100  # llava/constants.py


# ---- stand-ins (not installed here) ----
def get_pg_manager():
    return None  # llava.train.sequence_parallel: no sequence parallelism


class distributed:
    """llava.utils.distributed.all_gather over two ranks: the other rank's batch holds an image."""

    @staticmethod
    def all_gather(obj):
        return [obj, [{"shape": torch.Size([3, 16, 16]), "dtype": torch.float32}]]


class TinyLlamaModel(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(2)])
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, inputs_embeds, attention_mask):
        h = inputs_embeds
        for layer in self.layers:
            h = h + torch.tanh(layer(h)) * attention_mask.unsqueeze(-1)
        return self.norm(h)


class TinyLlamaForCausalLM(nn.Module):
    """A two-layer stand-in for the LLM, with transformers' PreTrainedModel.enable_input_require_grads."""

    def __init__(self, vocab_size=32, hidden_size=16):
        super().__init__()
        self.model = TinyLlamaModel(vocab_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)

    def forward(self, inputs_embeds, attention_mask, labels):
        logits = self.lm_head(self.model(inputs_embeds, attention_mask))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=IGNORE_INDEX)


class ImageEncoder(nn.Module):
    """Vision tower + mm projector stand-in: each image becomes 4 tokens of the LLM's width."""

    def __init__(self, hidden_size):
        super().__init__()
        self.end_tokens = None
        self.vision_tower = nn.Conv2d(3, 8, 8, stride=8)
        self.mm_projector = nn.Linear(8, hidden_size)

    def forward(self, images, config):
        return [self.mm_projector(self.vision_tower(img.unsqueeze(0)).flatten(2).transpose(1, 2)[0]) for img in images]


class Tokenizer:
    media_token_ids = {"image": 5}
    model_max_length = 64
    padding_side = "right"


# ---- llava/model/llava_arch.py ----
class LlavaMetaForCausalLM(ABC):
    def _embed(
        self,
        input_ids: torch.Tensor,
        media: Dict[str, List[torch.Tensor]],
        media_config: Dict[str, Dict[str, Any]],
        labels: Optional[torch.Tensor],
        attention_mask: Optional[torch.Tensor],
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        labels = labels if labels is not None else torch.full_like(input_ids, IGNORE_INDEX)
        attention_mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids, dtype=torch.bool)

        PROCESS_GROUP_MANAGER = get_pg_manager()
        if PROCESS_GROUP_MANAGER is not None:
            for name in media:
                self.encoders[name].end_tokens = None

        # Extract text and media embeddings
        text_embeds = self.llm.model.embed_tokens(input_ids)
        media_embeds = self.__embed_media_tokens(media, media_config)

        if PROCESS_GROUP_MANAGER is not None:
            media_embeds_video = []
            for i, images in enumerate(media_embeds["video"]):
                num_video_frame = media["video"][i].shape[0]
                if False:  # self.encoders["video"].pool_sizes:
                    pool_size = self.encoders["video"].pool_sizes[0][0]
                    num_video_frame = num_video_frame // pool_size * pool_size
                media_embeds_video += torch.unbind(images.reshape(num_video_frame, -1, images.shape[-1]))
            media_embeds["video"] = deque(media_embeds_video)

        # This is a workaround to make sure the dummy embeddings are consumed
        while media_embeds.get("dummy"):
            dummy_embed = media_embeds["dummy"].popleft()
            text_embeds = text_embeds + torch.sum(dummy_embed) * 0

        # Remove padding
        batch_size = labels.shape[0]
        text_embeds = [text_embeds[k][attention_mask[k]] for k in range(batch_size)]
        labels = [labels[k][attention_mask[k]] for k in range(batch_size)]

        # Build inverse mapping from token ID to media name
        media_tokens = {}
        for name, token_id in self.tokenizer.media_token_ids.items():
            media_tokens[token_id] = name

        # Fuse text and media embeddings
        inputs_m, labels_m = [], []
        for k in range(batch_size):
            inputs_mk, labels_mk = [], []
            pos = 0
            while pos < len(labels[k]):
                if input_ids[k][pos].item() in media_tokens:
                    end = pos + 1
                    name = media_tokens[input_ids[k][pos].item()] if PROCESS_GROUP_MANAGER is None else "video"
                    input = media_embeds[name].popleft()
                    label = torch.full([input.shape[0]], IGNORE_INDEX, device=labels[k].device, dtype=labels[k].dtype)
                else:
                    end = pos
                    while end < len(labels[k]) and input_ids[k][end].item() not in media_tokens:
                        end += 1
                    input = text_embeds[k][pos:end]
                    label = labels[k][pos:end]
                inputs_mk.append(input)
                labels_mk.append(label)
                pos = end
            inputs_m.append(torch.cat(inputs_mk, dim=0))
            labels_m.append(torch.cat(labels_mk, dim=0))
        inputs, labels = inputs_m, labels_m

        # Check if all media embeddings are consumed
        for name in media_embeds:
            if media_embeds[name]:
                raise ValueError(f"Not all {name} embeddings are consumed!")

        # Truncate sequences to `model_max_length` as media embeddings are inserted
        inputs, labels = self.__truncate_sequence(inputs, labels)

        # Pad sequences to the longest one in the batch
        return self.__batchify_sequence(inputs, labels)

    def __embed_media_tokens(
        self,
        media: Dict[str, List[torch.Tensor]],
        media_config: Dict[str, Dict[str, Any]],
    ) -> Dict[str, List[torch.Tensor]]:
        embeds = defaultdict(deque)
        for name in media:
            if self.training:
                # Gather metainfo of media objects from all ranks
                info = [{"shape": tensor.shape, "dtype": tensor.dtype} for tensor in media.get(name, [])]
                infos = list(chain(*distributed.all_gather(info)))

                # The entire batch does not contain any media objects of this type.
                if not infos:
                    continue

                # Create a dummy tensor to ensure the encoder is called, otherwise the training will hang.
                if media.get(name) is None or len(media[name]) == 0:
                    dummy = torch.zeros(infos[0]["shape"], dtype=infos[0]["dtype"], device=self.device)
                    # Also add a dummy block_sizes
                    if name == "image" and "block_sizes" in media_config[name]:
                        media_config[name]["block_sizes"].append(None)
                    embeds["dummy"].extend(self.encoders[name]([dummy], media_config[name]))
                    continue
            embeds[name] = deque(self.encoders[name](media[name], media_config[name]))
        return embeds

    def __truncate_sequence(
        self, inputs: List[torch.Tensor], labels: List[torch.Tensor]
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.training and any(len(input) > self.tokenizer.model_max_length for input in inputs):
            warnings.warn(f"Truncating sequences to `model_max_length` ({self.tokenizer.model_max_length}).")
            inputs = [input[: self.tokenizer.model_max_length] for input in inputs]
            labels = [label[: self.tokenizer.model_max_length] for label in labels]
        return inputs, labels

    def __batchify_sequence(
        self, inputs: List[torch.Tensor], labels: List[torch.Tensor]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch_size = len(inputs)
        device = inputs[0].device
        hidden_size = inputs[0].shape[1]
        max_length = max(inputs[k].shape[0] for k in range(batch_size))
        attention_mask = torch.ones((batch_size, max_length), dtype=torch.bool, device=device)

        inputs_p, labels_p = [], []
        for k in range(batch_size):
            size_pk = max_length - inputs[k].shape[0]
            inputs_pk = torch.zeros((size_pk, hidden_size), dtype=inputs[k].dtype, device=device)
            labels_pk = torch.full((size_pk,), IGNORE_INDEX, dtype=labels[k].dtype, device=device)
            if self.tokenizer.padding_side == "right":
                attention_mask[k, inputs[k].shape[0] :] = False
                inputs_pk = torch.cat([inputs[k], inputs_pk], dim=0)
                labels_pk = torch.cat([labels[k], labels_pk], dim=0)
            else:
                attention_mask[k, : -inputs[k].shape[0]] = False
                inputs_pk = torch.cat([inputs_pk, inputs[k]], dim=0)
                labels_pk = torch.cat([labels_pk, labels[k]], dim=0)
            inputs_p.append(inputs_pk)
            labels_p.append(labels_pk)

        inputs = torch.stack(inputs_p, dim=0)
        labels = torch.stack(labels_p, dim=0)
        return inputs, labels, attention_mask


class LlavaLlamaModel(LlavaMetaForCausalLM, nn.Module):
    """Stand-in for llava/model/language_model/llava_llama.py: the LLM, the image encoder, and the
    forward that embeds, then runs the LLM."""

    def __init__(self):
        nn.Module.__init__(self)
        self.llm = TinyLlamaForCausalLM()
        self.encoders = nn.ModuleDict({"image": ImageEncoder(16)})
        self.tokenizer = Tokenizer()

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, input_ids, media, media_config, labels, attention_mask):
        inputs_embeds, labels, attention_mask = self._embed(input_ids, media, media_config, labels, attention_mask)
        return self.llm(inputs_embeds=inputs_embeds, attention_mask=attention_mask, labels=labels)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = LlavaLlamaModel()
    # llava/train/train.py: the LLM's embeddings frozen, the vision side tuned, gradient checkpointing on
    model.llm.model.embed_tokens.weight.requires_grad_(False)
    model.llm.enable_input_require_grads()
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    # this rank's batch is text only
    input_ids = torch.randint(6, 32, (2, 10))
    labels = input_ids.clone()
    for step in range(2):
        loss = model(input_ids, {"image": []}, {"image": {}}, labels, None)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
