"""Qwen-VL-Series-Finetune, fixed as in PR #178: the patched forward scatters the image features out of place, `flat = flat.index_copy(0, row_idx, img)`."""
# outcome: ok
# source: https://github.com/2U1/Qwen-VL-Series-Finetune/pull/178
# repo: 2U1/Qwen-VL-Series-Finetune
# category: leaf
# twin: 308_qwen_vl_finetune_index_copy_embeds.py
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss
from transformers import Trainer, TrainingArguments


# stand-in for transformers' Qwen2.5-VL model classes (not installed here): a tiny model with
# the attributes the patched forward uses, and enable_input_require_grads as PreTrainedModel has it
@dataclass
class Qwen2_5_VLConfig:
    vocab_size: int = 40
    hidden_size: int = 16
    patch_dim: int = 12
    image_token_id: int = 37
    video_token_id: int = 38
    output_attentions: bool = False
    output_hidden_states: bool = False
    use_return_dict: bool = True


@dataclass
class BaseModelOutputWithPast:
    last_hidden_state: torch.Tensor = None
    past_key_values: Optional[tuple] = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None

    def __getitem__(self, i):
        return (self.last_hidden_state, self.past_key_values, self.hidden_states, self.attentions)[i]


@dataclass
class Qwen2_5_VLCausalLMOutputWithPast:
    loss: Optional[torch.Tensor] = None
    logits: torch.Tensor = None
    past_key_values: Optional[tuple] = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None
    rope_deltas: Optional[torch.Tensor] = None

    def __getitem__(self, key):
        return getattr(self, key) if isinstance(key, str) else (self.loss, self.logits)[key]


class Qwen2_5_VisionTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_embed = nn.Linear(config.patch_dim, config.hidden_size)
        self.merger = nn.Linear(4 * config.hidden_size, config.hidden_size)  # 2x2 patch merger

    @property
    def device(self):
        return self.patch_embed.weight.device

    @property
    def dtype(self):
        return self.patch_embed.weight.dtype

    def forward(self, hidden_states, grid_thw):
        x = torch.tanh(self.patch_embed(hidden_states))
        return self.merger(x.reshape(-1, 4 * x.shape[-1]))


class Qwen2_5_VLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layer = nn.Linear(config.hidden_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids=None, position_ids=None, attention_mask=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, cache_position=None):
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        hidden_states = inputs_embeds + torch.tanh(self.layer(inputs_embeds))
        return BaseModelOutputWithPast(last_hidden_state=self.norm(hidden_states))


class Qwen2_5_VLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.visual = Qwen2_5_VisionTransformer(config)
        self.model = Qwen2_5_VLModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.rope_deltas = None

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        pass

    def get_rope_index(self, input_ids, image_grid_thw=None, video_grid_thw=None, second_per_grid_ts=None,
                       attention_mask=None):
        B, T = input_ids.shape
        position_ids = torch.arange(T, device=input_ids.device).view(1, 1, -1).expand(3, B, -1)
        return position_ids, torch.zeros(B, 1, dtype=torch.long)


# ---- src/train/monkey_patch_forward.py ----
def replace_qwen2_5_with_mixed_modality_forward(use_liger=True):
    if use_liger:
        raise NotImplementedError("liger kernels are not installed here")
    else:
        Qwen2_5_VLForConditionalGeneration.forward = qwen2_5_mixed_modality_forward


# forward function without using fused linear cross entropy
def qwen2_5_mixed_modality_forward(
    self,
    input_ids: torch.LongTensor = None,
    attention_mask: Optional[torch.Tensor] = None,
    position_ids: Optional[torch.LongTensor] = None,
    past_key_values: Optional[List[torch.FloatTensor]] = None,
    inputs_embeds: Optional[torch.FloatTensor] = None,
    labels: Optional[torch.LongTensor] = None,
    use_cache: Optional[bool] = None,
    output_attentions: Optional[bool] = None,
    output_hidden_states: Optional[bool] = None,
    return_dict: Optional[bool] = None,
    pixel_values: Optional[torch.Tensor] = None,
    pixel_values_videos: Optional[torch.FloatTensor] = None,
    image_grid_thw: Optional[torch.LongTensor] = None,
    video_grid_thw: Optional[torch.LongTensor] = None,
    rope_deltas: Optional[torch.LongTensor] = None,
    cache_position: Optional[torch.LongTensor] = None,
    second_per_grid_ts: Optional[torch.Tensor] = None,
) -> Union[Tuple, Qwen2_5_VLCausalLMOutputWithPast]:

    output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
    output_hidden_states = (
        output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
    )
    return_dict = return_dict if return_dict is not None else self.config.use_return_dict

    if inputs_embeds is None:
        inputs_embeds = self.model.embed_tokens(input_ids)

        # Pass dummy image and dummy grid to the visual model to avoid deepspeed error.
        if pixel_values is None and pixel_values_videos is None:
            # Create dummy pixel_values and grid_thw for avoiding deepspeed error.
            dummy_pixel = torch.zeros(16, 12).to(self.visual.device)
            dummy_grid = torch.tensor([[1, 4, 4]]).to(self.visual.device)

            dummy_pixel = dummy_pixel.type(self.visual.dtype)
            image_embeds = self.visual(dummy_pixel, grid_thw=dummy_grid)
            # Operates as maksed_scatter for the image tokens
            # However the values are all zeros so it dosen't affect the embeddings.
            # This could avoid deepspeed error when some batch only has texts.
            inputs_embeds += image_embeds.mean() * 0

        if pixel_values is not None:
            pixel_values = pixel_values.type(self.visual.dtype)
            image_embeds = self.visual(pixel_values, grid_thw=image_grid_thw)
            n_image_tokens = (input_ids == self.config.image_token_id).sum().item()
            n_image_features = image_embeds.shape[0]
            if n_image_tokens != n_image_features:
                raise ValueError(
                    f"Image features and image tokens do not match: tokens: {n_image_tokens}, features {n_image_features}"
                )

            mask_img = (input_ids == self.config.image_token_id)
            if mask_img.any():
                B, T, H = inputs_embeds.shape
                b_idx, t_idx = mask_img.nonzero(as_tuple=True)
                row_idx = (b_idx * T + t_idx).to(inputs_embeds.device)

                img = image_embeds.to(inputs_embeds.device, dtype=inputs_embeds.dtype)
                flat = inputs_embeds.view(-1, H)
                flat = flat.index_copy(0, row_idx, img)
                inputs_embeds = flat.view(B, T, H)

        if pixel_values_videos is not None:
            pixel_values_videos = pixel_values_videos.type(self.visual.dtype)
            video_embeds = self.visual(pixel_values_videos, grid_thw=video_grid_thw)
            n_video_tokens = (input_ids == self.config.video_token_id).sum().item()
            n_video_features = video_embeds.shape[0]
            if n_video_tokens != n_video_features:
                raise ValueError(
                    f"Video features and video tokens do not match: tokens: {n_video_tokens}, features {n_video_features}"
                )

            mask_vid = (input_ids == self.config.video_token_id)
            if mask_vid.any():
                B, T, H = inputs_embeds.shape
                b_idx, t_idx = mask_vid.nonzero(as_tuple=True)                    # [N_vid]
                row_idx = (b_idx * T + t_idx).to(inputs_embeds.device)

                vid = video_embeds.to(inputs_embeds.device, dtype=inputs_embeds.dtype)
                flat = inputs_embeds.view(-1, H)
                flat.index_copy_(0, row_idx, vid)
                inputs_embeds = flat.view(B, T, H)

        if attention_mask is not None:
            attention_mask = attention_mask.to(inputs_embeds.device)

    # if we get 4D attention mask we cannot calculate rope deltas anymore. TODO @raushan fixme
    if position_ids is None and (attention_mask is None or attention_mask.ndim == 2):
        # calculate RoPE index once per generation in the pre-fill stage only
        if (cache_position is not None and cache_position[0] == 0) or self.rope_deltas is None:
            position_ids, rope_deltas = self.get_rope_index(
                input_ids,
                image_grid_thw,
                video_grid_thw,
                second_per_grid_ts,
                attention_mask,
            )
            self.rope_deltas = rope_deltas
        # then use the prev pre-calculated rope-deltas to get the correct position ids
        else:
            batch_size, seq_length, _ = inputs_embeds.shape
            delta = (
                (cache_position[0] + self.rope_deltas).to(inputs_embeds.device)
                if cache_position is not None
                else 0
            )
            position_ids = torch.arange(seq_length, device=inputs_embeds.device)
            position_ids = position_ids.view(1, -1).expand(batch_size, -1)
            if cache_position is not None:  # otherwise `deltas` is an int `0`
                delta = delta.repeat_interleave(batch_size // delta.shape[0], dim=0)
            position_ids = position_ids.add(delta)
            position_ids = position_ids.unsqueeze(0).expand(3, -1, -1)

    outputs = self.model(
        input_ids=None,
        position_ids=position_ids,
        attention_mask=attention_mask,
        past_key_values=past_key_values,
        inputs_embeds=inputs_embeds,
        use_cache=use_cache,
        output_attentions=output_attentions,
        output_hidden_states=output_hidden_states,
        return_dict=return_dict,
        cache_position=cache_position,
    )

    hidden_states = outputs[0]
    logits = self.lm_head(hidden_states)

    loss = None
    if labels is not None:
        # Upcast to float if we need to compute the loss to avoid potential precision issues
        logits = logits.float()
        # Shift so that tokens < n predict n
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        # Flatten the tokens
        loss_fct = CrossEntropyLoss()
        shift_logits = shift_logits.view(-1, self.config.vocab_size)
        shift_labels = shift_labels.view(-1)
        # Enable model parallelism
        shift_labels = shift_labels.to(shift_logits.device)
        loss = loss_fct(shift_logits, shift_labels)

    if not return_dict:
        output = (logits,) + outputs[1:]
        return (loss,) + output if loss is not None else output

    return Qwen2_5_VLCausalLMOutputWithPast(
        loss=loss,
        logits=logits,
        past_key_values=outputs.past_key_values,
        hidden_states=outputs.hidden_states,
        attentions=outputs.attentions,
        rope_deltas=self.rope_deltas,
    )


# ---- src/train/train_sft.py (shrunk: full fine-tuning of the vision tower, LLM frozen) ----
@dataclass
class ModelArguments:
    model_id: str = "Qwen/Qwen2.5-VL-3B-Instruct"


@dataclass
class SFTTrainingArguments(TrainingArguments):
    freeze_vision_tower: bool = False
    freeze_llm: bool = True
    freeze_merger: bool = False
    gradient_checkpointing: bool = True
    gradient_checkpointing_kwargs: dict = field(default_factory=dict)
    lora_enable: bool = False
    use_liger: bool = False


def set_requires_grad(parameters, requires_grad):
    for p in parameters:
        p.requires_grad = requires_grad

def configure_vision_tower(model, training_args, compute_dtype, device):
    vision_tower = model.visual
    vision_tower.to(dtype=compute_dtype, device=device)

    vision_model_params = model.visual.parameters()
    set_requires_grad(vision_model_params, not training_args.freeze_vision_tower)

    # Handle merger specifically
    merger_params = model.visual.merger.parameters()
    set_requires_grad(merger_params, not training_args.freeze_merger)

def configure_llm(model, training_args):
    lm_head = model.lm_head.parameters()
    set_requires_grad(lm_head, not training_args.freeze_llm)

    llm_params = model.model.parameters()
    set_requires_grad(llm_params, not training_args.freeze_llm)


class QwenSFTTrainer(Trainer):
    pass


def make_supervised_data_module(config, n=2):
    samples = []
    for _ in range(n):
        input_ids = torch.randint(0, 30, (1, 10))
        input_ids[0, 2:6] = config.image_token_id  # 4 image tokens for a 1x4x4 grid after the 2x2 merger
        samples.append(dict(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            labels=input_ids.clone(),
            pixel_values=torch.randn(16, config.patch_dim),
            image_grid_thw=torch.tensor([[1, 4, 4]]),
        ))
    return dict(train_dataset=samples, data_collator=None)


def train():
    model_args = ModelArguments()
    training_args = SFTTrainingArguments(output_dir="output", num_train_epochs=1, learning_rate=1e-4)
    compute_dtype = torch.float32

    replace_qwen2_5_with_mixed_modality_forward(use_liger=training_args.use_liger)

    model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig())  # .from_pretrained(model_args.model_id)

    model.config.use_cache = False
    model_to_configure = model
    configure_llm(model_to_configure, training_args)
    configure_vision_tower(model_to_configure, training_args, compute_dtype, "cpu")

    if training_args.gradient_checkpointing:
        model.enable_input_require_grads()
        training_args.gradient_checkpointing_kwargs = {"use_reentrant": True}

    data_module = make_supervised_data_module(model.config)

    trainer = QwenSFTTrainer(
        model=model,
        args=training_args,
        **data_module
    )

    trainer.train()
    print("done")


if __name__ == "__main__":
    train()
