"""CoOp prompt learning: the context vectors are sliced from a no_grad token embedding (`embedding[0, 1 : 1 + n_ctx, :]`) and wrapped as `self.ctx = nn.Parameter(ctx_vectors)`, the SOS / class tokens become buffers, every CLIP parameter outside prompt_learner is switched off with `param.requires_grad_(False)`, and only the prompt learner is optimized."""
# outcome: ok
# source: https://github.com/KaiyangZhou/CoOp/blob/main/trainers/coop.py
# repo: KaiyangZhou/CoOp
# category: leaf
from collections import OrderedDict
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.nn import functional as F


# ---- stand-ins for the clip package (a tiny randomly initialized CLIP, a whitespace tokenizer) ----
_VOCAB = {}
SOT, EOT, CONTEXT_LENGTH = 1, 63, 16


class _Tokenizer:
    def encode(self, text):
        ids = []
        for word in text.lower().replace(".", " .").split():
            if word not in _VOCAB:
                _VOCAB[word] = 2 + len(_VOCAB)
            ids.append(_VOCAB[word])
        return ids


class clip:
    @staticmethod
    def tokenize(text):
        tokens = [SOT] + _Tokenizer().encode(text) + [EOT]
        result = torch.zeros(1, CONTEXT_LENGTH, dtype=torch.long)
        result[0, :len(tokens)] = torch.tensor(tokens)
        return result


class QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor):
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, attn_mask: torch.Tensor = None):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(OrderedDict([
            ("c_fc", nn.Linear(d_model, d_model * 4)),
            ("gelu", QuickGELU()),
            ("c_proj", nn.Linear(d_model * 4, d_model))
        ]))
        self.ln_2 = nn.LayerNorm(d_model)
        self.attn_mask = attn_mask

    def attention(self, x: torch.Tensor):
        return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

    def forward(self, x: torch.Tensor):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyCLIP(nn.Module):
    def __init__(self, width=32, heads=4, layers=2, embed_dim=16, image_resolution=32):
        super().__init__()
        mask = torch.empty(CONTEXT_LENGTH, CONTEXT_LENGTH).fill_(float("-inf")).triu_(1)
        self.transformer = nn.Sequential(*[ResidualAttentionBlock(width, heads, mask) for _ in range(layers)])
        self.token_embedding = nn.Embedding(EOT + 1, width)
        self.positional_embedding = nn.Parameter(torch.randn(CONTEXT_LENGTH, width) * 0.01)
        self.ln_final = nn.LayerNorm(width)
        self.text_projection = nn.Parameter(torch.randn(width, embed_dim) * width ** -0.5)
        self.visual = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.ReLU(), nn.Flatten(),
                                    nn.Linear(8 * (image_resolution // 4) ** 2, embed_dim))
        self.visual.input_resolution = image_resolution
        self.logit_scale = nn.Parameter(torch.ones([]) * 4.6052)

    @property
    def dtype(self):
        return self.visual[0].weight.dtype


# ---- trainers/coop.py ----
_tokenizer = _Tokenizer()


class TextEncoder(nn.Module):
    def __init__(self, clip_model):
        super().__init__()
        self.transformer = clip_model.transformer
        self.positional_embedding = clip_model.positional_embedding
        self.ln_final = clip_model.ln_final
        self.text_projection = clip_model.text_projection
        self.dtype = clip_model.dtype

    def forward(self, prompts, tokenized_prompts):
        x = prompts + self.positional_embedding.type(self.dtype)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        x = self.ln_final(x).type(self.dtype)

        # x.shape = [batch_size, n_ctx, transformer.width]
        # take features from the eot embedding (eot_token is the highest number in each sequence)
        x = x[torch.arange(x.shape[0]), tokenized_prompts.argmax(dim=-1)] @ self.text_projection

        return x


class PromptLearner(nn.Module):
    def __init__(self, cfg, classnames, clip_model):
        super().__init__()
        n_cls = len(classnames)
        n_ctx = cfg.TRAINER.COOP.N_CTX
        ctx_init = cfg.TRAINER.COOP.CTX_INIT
        dtype = clip_model.dtype
        ctx_dim = clip_model.ln_final.weight.shape[0]
        clip_imsize = clip_model.visual.input_resolution
        cfg_imsize = cfg.INPUT.SIZE[0]
        assert (
            cfg_imsize == clip_imsize
        ), f"cfg_imsize ({cfg_imsize}) must equal to clip_imsize ({clip_imsize})"

        if ctx_init:
            # use given words to initialize context vectors
            ctx_init = ctx_init.replace("_", " ")
            n_ctx = len(ctx_init.split(" "))
            prompt = clip.tokenize(ctx_init)
            with torch.no_grad():
                embedding = clip_model.token_embedding(prompt).type(dtype)
            ctx_vectors = embedding[0, 1 : 1 + n_ctx, :]
            prompt_prefix = ctx_init

        else:
            # random initialization
            if cfg.TRAINER.COOP.CSC:
                print("Initializing class-specific contexts")
                ctx_vectors = torch.empty(n_cls, n_ctx, ctx_dim, dtype=dtype)
            else:
                print("Initializing a generic context")
                ctx_vectors = torch.empty(n_ctx, ctx_dim, dtype=dtype)
            nn.init.normal_(ctx_vectors, std=0.02)
            prompt_prefix = " ".join(["X"] * n_ctx)

        print(f'Initial context: "{prompt_prefix}"')
        print(f"Number of context words (tokens): {n_ctx}")

        self.ctx = nn.Parameter(ctx_vectors)  # to be optimized

        classnames = [name.replace("_", " ") for name in classnames]
        name_lens = [len(_tokenizer.encode(name)) for name in classnames]
        prompts = [prompt_prefix + " " + name + "." for name in classnames]

        tokenized_prompts = torch.cat([clip.tokenize(p) for p in prompts])
        with torch.no_grad():
            embedding = clip_model.token_embedding(tokenized_prompts).type(dtype)

        # These token vectors will be saved when in save_model(),
        # but they should be ignored in load_model() as we want to use
        # those computed using the current class names
        self.register_buffer("token_prefix", embedding[:, :1, :])  # SOS
        self.register_buffer("token_suffix", embedding[:, 1 + n_ctx :, :])  # CLS, EOS

        self.n_cls = n_cls
        self.n_ctx = n_ctx
        self.tokenized_prompts = tokenized_prompts  # torch.Tensor
        self.name_lens = name_lens
        self.class_token_position = cfg.TRAINER.COOP.CLASS_TOKEN_POSITION

    def forward(self):
        ctx = self.ctx
        if ctx.dim() == 2:
            ctx = ctx.unsqueeze(0).expand(self.n_cls, -1, -1)

        prefix = self.token_prefix
        suffix = self.token_suffix

        if self.class_token_position == "end":
            prompts = torch.cat(
                [
                    prefix,  # (n_cls, 1, dim)
                    ctx,  # (n_cls, n_ctx, dim)
                    suffix,  # (n_cls, *, dim)
                ],
                dim=1,
            )

        elif self.class_token_position == "middle":
            half_n_ctx = self.n_ctx // 2
            prompts = []
            for i in range(self.n_cls):
                name_len = self.name_lens[i]
                prefix_i = prefix[i : i + 1, :, :]
                class_i = suffix[i : i + 1, :name_len, :]
                suffix_i = suffix[i : i + 1, name_len:, :]
                ctx_i_half1 = ctx[i : i + 1, :half_n_ctx, :]
                ctx_i_half2 = ctx[i : i + 1, half_n_ctx:, :]
                prompt = torch.cat(
                    [
                        prefix_i,  # (1, 1, dim)
                        ctx_i_half1,  # (1, n_ctx//2, dim)
                        class_i,  # (1, name_len, dim)
                        ctx_i_half2,  # (1, n_ctx//2, dim)
                        suffix_i,  # (1, *, dim)
                    ],
                    dim=1,
                )
                prompts.append(prompt)
            prompts = torch.cat(prompts, dim=0)

        else:
            raise ValueError

        return prompts


class CustomCLIP(nn.Module):
    def __init__(self, cfg, classnames, clip_model):
        super().__init__()
        self.prompt_learner = PromptLearner(cfg, classnames, clip_model)
        self.tokenized_prompts = self.prompt_learner.tokenized_prompts
        self.image_encoder = clip_model.visual
        self.text_encoder = TextEncoder(clip_model)
        self.logit_scale = clip_model.logit_scale
        self.dtype = clip_model.dtype

    def forward(self, image):
        image_features = self.image_encoder(image.type(self.dtype))

        prompts = self.prompt_learner()
        tokenized_prompts = self.tokenized_prompts
        text_features = self.text_encoder(prompts, tokenized_prompts)

        image_features = image_features / image_features.norm(dim=-1, keepdim=True)
        text_features = text_features / text_features.norm(dim=-1, keepdim=True)

        logit_scale = self.logit_scale.exp()
        logits = logit_scale * image_features @ text_features.t()

        return logits


# the parts of Dassl's TrainerX that CoOp.build_model / forward_backward use
class CoOp:
    def __init__(self, cfg, classnames):
        self.cfg = cfg
        self.classnames = classnames
        self.device = torch.device("cpu")
        self.build_model()

    def build_model(self):
        cfg = self.cfg
        classnames = self.classnames

        print(f"Loading CLIP (backbone: {cfg.MODEL.BACKBONE.NAME})")
        clip_model = TinyCLIP()
        if not cfg.TRAINER.COOP.HALF_PREC:
            print("Converting clip_model to float32")
            clip_model.float()

        print("Building custom CLIP")
        self.model = CustomCLIP(cfg, classnames, clip_model)

        print("Turning off gradients in both the image and the text encoder")
        for name, param in self.model.named_parameters():
            if "prompt_learner" not in name:
                param.requires_grad_(False)

        self.model.to(self.device)
        # NOTE: only give prompt_learner to the optimizer
        self.optim = torch.optim.SGD(self.model.prompt_learner.parameters(), lr=cfg.OPTIM.LR, momentum=0.9)
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.optim, cfg.OPTIM.MAX_EPOCH)

    def model_backward_and_update(self, loss):
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()

    def forward_backward(self, batch):
        image, label = self.parse_batch_train(batch)
        output = self.model(image)
        loss = F.cross_entropy(output, label)
        self.model_backward_and_update(loss)

        loss_summary = {
            "loss": loss.item(),
            "acc": (output.argmax(1) == label).float().mean().item() * 100,
        }
        return loss_summary

    def parse_batch_train(self, batch):
        input = batch["img"]
        label = batch["label"]
        input = input.to(self.device)
        label = label.to(self.device)
        return input, label


if __name__ == "__main__":
    torch.manual_seed(1)
    classnames = ["golden_retriever", "tabby_cat", "red_fox"]
    for ctx_init, csc, position in [("a_photo_of_a", False, "end"), ("", True, "middle")]:
        cfg = SimpleNamespace(
            MODEL=SimpleNamespace(BACKBONE=SimpleNamespace(NAME="RN50")),
            INPUT=SimpleNamespace(SIZE=(32, 32)),
            OPTIM=SimpleNamespace(LR=0.002, MAX_EPOCH=2),
            TRAINER=SimpleNamespace(COOP=SimpleNamespace(N_CTX=4, CTX_INIT=ctx_init, CSC=csc,
                                                         CLASS_TOKEN_POSITION=position, HALF_PREC=False)),
        )
        trainer = CoOp(cfg, classnames)
        for step in range(2):
            # random 32x32 images instead of the few-shot ImageNet split
            batch = {"img": torch.randn(4, 3, 32, 32), "label": torch.randint(0, len(classnames), (4,))}
            print(trainer.forward_backward(batch))
        trainer.sched.step()
