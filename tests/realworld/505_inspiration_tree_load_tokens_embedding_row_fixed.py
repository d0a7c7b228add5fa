"""Inspiration Tree's `load_tokens`, fixed as the issue thread does: its body runs under `with torch.no_grad():`, so writing the learned vectors into rows of the token embedding is not a recorded in-place op on the weight."""
# outcome: ok
# source: https://github.com/google/inspiration_tree/issues/25
# repo: google/inspiration_tree
# category: leaf
# twin: 504_inspiration_tree_load_tokens_embedding_row.py
import os
import types

import numpy as np
import torch
import torch.nn as nn


# ---- stand-ins for diffusers' StableDiffusionPipeline and its CLIP tokenizer / text encoder (not installed here) ----
class CLIPTokenizer:
    def __init__(self, vocab=("a", "photo", "of", "sculpture", "cat", "<|endoftext|>")):
        self.vocab = {w: i for i, w in enumerate(vocab)}

    def __len__(self):
        return len(self.vocab)

    def add_tokens(self, tokens):
        added = 0
        for t in tokens:
            if t not in self.vocab:
                self.vocab[t] = len(self.vocab)
                added += 1
        return added

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[t] for t in tokens]


class CLIPTextModel(nn.Module):
    def __init__(self, vocab_size, hidden_size=16):
        super().__init__()
        self.text_model = types.SimpleNamespace()
        self.text_model.embeddings = nn.Module()
        self.text_model.embeddings.token_embedding = nn.Embedding(vocab_size, hidden_size)
        self.add_module("embeddings", self.text_model.embeddings)
        self.encoder = nn.Linear(hidden_size, hidden_size)

    def resize_token_embeddings(self, new_num_tokens):
        old = self.text_model.embeddings.token_embedding
        new = nn.Embedding(new_num_tokens, old.embedding_dim)
        new.weight.data[: old.num_embeddings] = old.weight.data
        self.text_model.embeddings.token_embedding = new
        return new

    def forward(self, input_ids):
        return self.encoder(self.text_model.embeddings.token_embedding(input_ids))


class StableDiffusionPipeline:
    def __init__(self):
        self.tokenizer = CLIPTokenizer()
        self.text_encoder = CLIPTextModel(len(self.tokenizer))
        self.unet = nn.Conv2d(4 + 16, 4, 3, padding=1)
        self.decoder = nn.Conv2d(4, 3, 1)

    @classmethod
    def from_pretrained(cls, model_id, torch_dtype=None, **kwargs):
        return cls()

    def to(self, device):
        return self

    def __call__(self, prompt, num_inference_steps=25, guidance_scale=7.5):
        ids = [torch.tensor(self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(p))) for p in prompt]
        cond = torch.stack([self.text_encoder(i).mean(0) for i in ids])
        latents = torch.randn(len(prompt), 4, 8, 8)
        for _ in range(num_inference_steps):
            eps = self.unet(torch.cat([latents, cond[:, :, None, None].expand(-1, -1, 8, 8)], 1))
            latents = latents - 0.1 * guidance_scale * eps / num_inference_steps
        images = (self.decoder(latents).clamp(-1, 1) + 1) * 127.5
        return types.SimpleNamespace(images=[img.permute(1, 2, 0).byte().numpy() for img in images])


# ---- utils.py ----
def load_tokens(pipe, data, device):
    """
    Adds the new learned tokens into the predefined dictionary of pipe.
    """
    with torch.no_grad():
        added_tokens = []
        for t_ in data.keys():
            added_tokens.append(t_)
        num_added_tokens = pipe.tokenizer.add_tokens(added_tokens)
        pipe.text_encoder.resize_token_embeddings(len(pipe.tokenizer))
        for token_ in data.keys():
            ref_token = pipe.tokenizer.tokenize(token_)
            ref_indx = pipe.tokenizer.convert_tokens_to_ids(ref_token)[0]
            embd_cur = data[token_].to(device).to(dtype=torch.float16)
            pipe.text_encoder.text_model.embeddings.token_embedding.weight[ref_indx] = embd_cur


def save_rev_samples(output_path, path_to_embed, model_id, device):
    if not os.path.exists(f"{output_path}/final_samples"):
        os.mkdir(f"{output_path}/final_samples")
    prompts_title = ["Vl", "Vr", "Vl Vr"]
    prompt_to_vec = {}
    assert os.path.exists(path_to_embed)
    data = torch.load(path_to_embed)
    combined = []
    prompts = []
    for w_ in data.keys():
        prompt_to_vec[w_] = data[w_]
        combined.append(w_)
        prompts.append(w_)
    prompts.append(" ".join(combined))

    pipe = StableDiffusionPipeline.from_pretrained(model_id, torch_dtype=torch.float16, safety_checker=None, requires_safety_checker=False).to(device)
    load_tokens(pipe, prompt_to_vec, device)

    print("Prompts loaded to pipe ...")
    print(prompt_to_vec.keys())

    gen_seeds = [4321, 95]
    num_images_per_seed = 2

    rows = []
    for i in range(len(prompts)):
        images_per_seed = []
        for gen_seed in gen_seeds:
            with torch.no_grad():
                torch.manual_seed(gen_seed)
                images = pipe(prompt=[prompts[i]] * num_images_per_seed, num_inference_steps=25, guidance_scale=7.5).images
            images_per_seed.extend(images)
        rows.append(np.hstack([np.asarray(img) for img in images_per_seed]))
    # the repo plots the rows with matplotlib and saves final_samples.jpg
    return np.vstack(rows)


if __name__ == "__main__":
    torch.manual_seed(0)
    # the learned left/right children of a node, as main_multiseed.py saves them (embeds.bin)
    torch.save({"<*>": torch.randn(16), "<&>": torch.randn(16)}, "embeds.bin")
    grid = save_rev_samples(".", "embeds.bin", "runwayml/stable-diffusion-v1-5", "cpu")
    print(grid.shape)
