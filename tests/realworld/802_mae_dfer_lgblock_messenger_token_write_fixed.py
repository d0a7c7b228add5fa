"""MAE-DFER's LGBlock as the repository fixed it: the messenger and local tokens are taken with `rearrange(x[:,0].clone(), ...)`, so writing the attended tokens back into `x` no longer touches what the LayerNorms saved."""
# outcome: ok
# source: https://github.com/sunlicai/MAE-DFER/issues/15
# repo: sunlicai/MAE-DFER
# category: residual
# twin: 801_mae_dfer_lgblock_messenger_token_write.py
from functools import partial
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- stand-ins for timm.models.layers (timm is not installed here) ----
def drop_path(x, drop_prob: float = 0., training: bool = False):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()
    return x.div(keep_prob) * random_tensor


def to_2tuple(x):
    return x if isinstance(x, tuple) else (x, x)


def trunc_normal_(tensor, mean=0., std=1.):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std)


# ---- stand-in for einops.rearrange / einops.repeat (einops is not installed here) ----
def _parse(side):
    groups, cur, depth = [], None, False
    for tok in side.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            cur, depth = [], True
        elif tok == ")":
            groups.append(cur)
            cur, depth = None, False
        elif depth:
            cur.append(tok)
        else:
            groups.append([tok])
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    left, right = [_parse(s) for s in pattern.split("->")]
    sizes = dict(axes_lengths)
    for group, dim in zip(left, tensor.shape):
        known = 1
        unknown = None
        for name in group:
            if name == "1":
                continue
            if name in sizes:
                known *= sizes[name]
            else:
                unknown = name
        if unknown is not None:
            sizes[unknown] = dim // known
    elementary = [name for group in left for name in group if name != "1"]
    x = tensor.reshape([sizes[name] for name in elementary])
    order = [name for group in right for name in group if name != "1"]
    x = x.permute([elementary.index(name) for name in order])
    shape = []
    for group in right:
        n = 1
        for name in group:
            n *= 1 if name == "1" else sizes[name]
        shape.append(n)
    return x.reshape(shape)


def repeat(tensor, pattern, **axes_lengths):
    left, right = [_parse(s) for s in pattern.split("->")]
    names = [g[0] for g in left]
    x = tensor
    out_names = [g[0] for g in right]
    for i, name in enumerate(out_names):
        if name not in names:
            x = x.unsqueeze(i)
            names.insert(i, name)
    shape = [axes_lengths.get(n, -1) if n != "1" else 1 for n in out_names]
    return x.expand(shape)


# ---- modeling_finetune.py ----
class DropPath(nn.Module):
    """Drop paths (Stochastic Depth) per sample  (when applied in main path of residual blocks).
    """
    def __init__(self, drop_prob=None):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)

    def extra_repr(self) -> str:
        return 'p={}'.format(self.drop_prob)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        # x = self.drop(x)
        # commit this for the orignal BERT implement
        x = self.fc2(x)
        x = self.drop(x)
        return x


"""
adapted from https://github.com/lucidrains/perceiver-pytorch/blob/main/perceiver_pytorch/perceiver_pytorch.py
"""
# support cross attention
class GeneralAttention(nn.Module):
    def __init__(
            self, dim, context_dim=None, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0.,
            proj_drop=0., attn_head_dim=None):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        if attn_head_dim is not None:
            head_dim = attn_head_dim
        all_head_dim = head_dim * self.num_heads
        self.scale = qk_scale or head_dim ** -0.5

        self.q = nn.Linear(dim, all_head_dim, bias=False)
        self.kv = nn.Linear(dim if context_dim is None else context_dim, all_head_dim * 2, bias=False)
        if qkv_bias:
            self.q_bias = nn.Parameter(torch.zeros(all_head_dim))
            self.v_bias = nn.Parameter(torch.zeros(all_head_dim))
        else:
            self.q_bias = None
            self.v_bias = None

        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(all_head_dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x, context=None):
        B, T1, C = x.shape
        q_bias, kv_bias = self.q_bias, None
        if self.q_bias is not None:
            kv_bias = torch.cat((torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
        q = F.linear(input=x, weight=self.q.weight, bias=q_bias)
        q = q.reshape(B, T1, self.num_heads, -1).transpose(1,2) # me: (B, H, T1, C//H)
        kv = F.linear(input=x if context is None else context, weight=self.kv.weight, bias=kv_bias)
        _, T2, _ = kv.shape
        kv = kv.reshape(B, T2, 2, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1] # make torchscript happy (cannot use tensor as tuple), me： (B, H, T2, C//H)

        q = q * self.scale
        attn = (q @ k.transpose(-2, -1)) # me: (B, H, T1, T2)

        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)

        x = (attn @ v).transpose(1, 2).reshape(B, T1, -1) # (B, H, T1, C//H) -> (B, T1, H, C//H) -> (B, T1, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


# local + global
class LGBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop=0., attn_drop=0.,
                 drop_path=0., init_values=None, act_layer=nn.GELU, norm_layer=nn.LayerNorm,
                 attn_head_dim=None,
                 # new added
                 first_attn_type='self', third_attn_type='cross',
                 attn_param_sharing_first_third=False, attn_param_sharing_all=False,
                 no_second=False, no_third=False,
                 ):

        super().__init__()

        assert first_attn_type in ['self', 'cross'], f"Error: invalid attention type '{first_attn_type}', expected 'self' or 'cross'!"
        assert third_attn_type in ['self', 'cross'], f"Error: invalid attention type '{third_attn_type}', expected 'self' or 'cross'!"
        self.first_attn_type = first_attn_type
        self.third_attn_type = third_attn_type
        self.attn_param_sharing_first_third = attn_param_sharing_first_third
        self.attn_param_sharing_all = attn_param_sharing_all

        # Attention layer
        ## perform local (intra-region) attention, update messenger tokens
        ## (local->messenger) or (local<->local, local<->messenger)
        self.first_attn_norm0 = norm_layer(dim)
        if self.first_attn_type == 'cross':
            self.first_attn_norm1 = norm_layer(dim)
        self.first_attn = GeneralAttention(
            dim=dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
            attn_drop=attn_drop, proj_drop=drop, attn_head_dim=attn_head_dim)

        ## perform global (inter-region) attention on messenger tokens
        ## (messenger<->messenger)
        self.no_second = no_second
        if not no_second:
            self.second_attn_norm0 = norm_layer(dim)
            if attn_param_sharing_all:
                self.second_attn = self.first_attn
            else:
                self.second_attn = GeneralAttention(
                    dim=dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
                    attn_drop=attn_drop, proj_drop=drop, attn_head_dim=attn_head_dim)

        ## perform local (intra-region) attention to inject global information into local tokens
        ## (messenger->local) or (local<->local, local<->messenger)
        self.no_third = no_third
        if not no_third:
            self.third_attn_norm0 = norm_layer(dim)
            if self.third_attn_type == 'cross':
                self.third_attn_norm1 = norm_layer(dim)
            if attn_param_sharing_first_third or attn_param_sharing_all:
                self.third_attn = self.first_attn
            else:
                self.third_attn = GeneralAttention(
                    dim=dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale,
                    attn_drop=attn_drop, proj_drop=drop, attn_head_dim=attn_head_dim)

        # FFN layer
        # NOTE: drop path for stochastic depth, we shall see if this is better than dropout here
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = norm_layer(dim)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)

        if init_values > 0:
            self.gamma_0 = nn.Parameter(init_values * torch.ones((dim)),requires_grad=True)
            self.gamma_1 = nn.Parameter(init_values * torch.ones((dim)),requires_grad=True)
            self.gamma_2 = nn.Parameter(init_values * torch.ones((dim)),requires_grad=True)
        else:
            self.gamma_0, self.gamma_1, self.gamma_2 = None, None, None


    def forward(self, x, b):
        """
        :param x: (B*N, S, C),
            B: batch size
            N: number of local regions
            S: 1 + region size, 1: attached messenger token for each local region
            C: feature dim
        param b: batch size
        :return: (B*N, S, C),
        """
        bn = x.shape[0]
        n = bn // b # number of local regions
        if self.gamma_1 is None:
            # Attention layer
            ## perform local (intra-region) self-attention
            if self.first_attn_type == 'self':
                x = x + self.drop_path(self.first_attn(self.first_attn_norm0(x)))
            else: # 'cross'
                x[:,:1] = x[:,:1] + self.drop_path(
                    self.first_attn(
                        self.first_attn_norm0(x[:,:1]), # (b*n, 1, c)
                        context=self.first_attn_norm1(x[:,1:]) # (b*n, s-1, c)
                    )
                )

            ## perform global (inter-region) self-attention
            if not self.no_second:
                # messenger_tokens: representative tokens
                # .clone(): fix in-place error in higher pytorch version, please refer to https://github.com/sunlicai/MAE-DFER/issues/3#issuecomment-1809834219
                messenger_tokens = rearrange(x[:,0].clone(), '(b n) c -> b n c', b=b) # attn on 'n' dim
                messenger_tokens = messenger_tokens + self.drop_path(
                    self.second_attn(self.second_attn_norm0(messenger_tokens))
                )
                x[:,0] = rearrange(messenger_tokens, 'b n c -> (b n) c')
            else: # for usage in the third attn
                # .clone(): fix in-place error in higher pytorch version, please refer to https://github.com/sunlicai/MAE-DFER/issues/3#issuecomment-1809834219
                messenger_tokens = rearrange(x[:,0].clone(), '(b n) c -> b n c', b=b) # attn on 'n' dim

            ## perform local-global interaction
            if not self.no_third:
                if self.third_attn_type == 'self':
                    x = x + self.drop_path(self.third_attn(self.third_attn_norm0(x)))
                else:
                    # .clone(): fix in-place error in higher pytorch version, please refer to https://github.com/sunlicai/MAE-DFER/issues/3#issuecomment-1809834219
                    local_tokens = rearrange(x[:,1:].clone(), '(b n) s c -> b (n s) c', b=b)# NOTE: n merges into s (not b), (B, N*(S-1), D)
                    local_tokens = local_tokens + self.drop_path(
                        self.third_attn(
                            self.third_attn_norm0(local_tokens), # (b, n*(s-1), c)
                            context=self.third_attn_norm1(messenger_tokens) # (b, n*1, c)
                        )
                    )
                    x[:,1:] = rearrange(local_tokens, 'b (n s) c -> (b n) s c', n=n)

            # FFN layer
            x = x + self.drop_path(self.mlp(self.norm2(x)))
        else:
            raise NotImplementedError
        return x


class PatchEmbed(nn.Module):
    """ Image to Patch Embedding
    """
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768, num_frames=16, tubelet_size=2):
        super().__init__()
        img_size = to_2tuple(img_size)
        patch_size = to_2tuple(patch_size)
        self.tubelet_size = int(tubelet_size)
        num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0]) * (num_frames // self.tubelet_size)
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = num_patches

        # me: for more attention types
        self.temporal_seq_len = num_frames // self.tubelet_size
        self.spatial_num_patches = num_patches // self.temporal_seq_len
        self.input_token_size = (num_frames // self.tubelet_size, img_size[0] // patch_size[0], img_size[1] // patch_size[1])

        self.proj = nn.Conv3d(in_channels=in_chans, out_channels=embed_dim,
                            kernel_size = (self.tubelet_size,  patch_size[0],patch_size[1]),
                            stride=(self.tubelet_size,  patch_size[0],  patch_size[1]))

    def forward(self, x, **kwargs):
        B, C, T, H, W = x.shape
        # FIXME look at relaxing size constraints
        assert H == self.img_size[0] and W == self.img_size[1], \
            f"Input image size ({H}*{W}) doesn't match model ({self.img_size[0]}*{self.img_size[1]})."
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x

# sin-cos position encoding
# https://github.com/jadore801120/attention-is-all-you-need-pytorch/blob/master/transformer/Models.py#L31
def get_sinusoid_encoding_table(n_position, d_hid):
    ''' Sinusoid position encoding table '''
    # TODO: make it with torch instead of numpy
    def get_position_angle_vec(position):
        return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]

    sinusoid_table = np.array([get_position_angle_vec(pos_i) for pos_i in range(n_position)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2]) # dim 2i
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2]) # dim 2i+1

    return torch.FloatTensor(sinusoid_table).unsqueeze(0)


class VisionTransformer(nn.Module):
    """ Vision Transformer with support for patch or hybrid CNN input stage
    (the 'local_global' attention type only; the 'joint' Block is left out)
    """
    def __init__(self,
                 img_size=224,
                 patch_size=16,
                 in_chans=3,
                 num_classes=1000,
                 embed_dim=768,
                 depth=12,
                 num_heads=12,
                 mlp_ratio=4.,
                 qkv_bias=False,
                 qk_scale=None,
                 drop_rate=0.,
                 attn_drop_rate=0.,
                 drop_path_rate=0.,
                 norm_layer=nn.LayerNorm,
                 init_values=0.,
                 use_learnable_pos_emb=False,
                 init_scale=0.,
                 all_frames=16,
                 tubelet_size=2,
                 use_mean_pooling=True,
                 attn_type='local_global',
                 lg_region_size=(2, 2, 10), lg_first_attn_type='self', lg_third_attn_type='cross',  # for local_global
                 lg_attn_param_sharing_first_third=False, lg_attn_param_sharing_all=False,
                 lg_classify_token_type='org', lg_no_second=False, lg_no_third=False,
                 ):
        super().__init__()
        self.num_classes = num_classes
        self.num_features = self.embed_dim = embed_dim  # num_features for consistency with other models
        self.tubelet_size = tubelet_size
        self.patch_embed = PatchEmbed(
            img_size=img_size, patch_size=patch_size, in_chans=in_chans, embed_dim=embed_dim, num_frames=all_frames, tubelet_size=self.tubelet_size)
        num_patches = self.patch_embed.num_patches

        if use_learnable_pos_emb:
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dim))
        else:
            # sine-cosine positional embeddings is on the way
            self.pos_embed = get_sinusoid_encoding_table(num_patches, embed_dim)

        self.pos_drop = nn.Dropout(p=drop_rate)

        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # stochastic depth decay rule
        self.attn_type = attn_type
        self.blocks = nn.ModuleList([
            LGBlock(
                dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_scale=qk_scale,
                drop=drop_rate, attn_drop=attn_drop_rate, drop_path=dpr[i], norm_layer=norm_layer,
                init_values=init_values,
                first_attn_type=lg_first_attn_type, third_attn_type=lg_third_attn_type,
                attn_param_sharing_first_third=lg_attn_param_sharing_first_third,
                attn_param_sharing_all=lg_attn_param_sharing_all,
                no_second=lg_no_second, no_third=lg_no_third,
            )
            for i in range(depth)])
        # region tokens
        self.lg_region_size = lg_region_size # (t, h, w)
        self.lg_num_region_size = list(i//j for i,j in zip(self.patch_embed.input_token_size, lg_region_size)) # (nt, nh, nw)
        num_regions = self.lg_num_region_size[0] * self.lg_num_region_size[1] * self.lg_num_region_size[2] # nt * nh * nw
        self.lg_region_tokens = nn.Parameter(torch.zeros(num_regions, embed_dim))
        trunc_normal_(self.lg_region_tokens, std=.02)
        self.lg_classify_token_type = lg_classify_token_type

        self.norm = nn.Identity() if use_mean_pooling else norm_layer(embed_dim)
        self.fc_norm = norm_layer(embed_dim) if use_mean_pooling else None
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.head_activation_func = nn.Identity()

        trunc_normal_(self.head.weight, std=.02)
        self.apply(self._init_weights)

        self.head.weight.data.mul_(init_scale)
        self.head.bias.data.mul_(init_scale)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward_features(self, x):
        x = self.patch_embed(x)
        B, _, _ = x.size()

        if self.pos_embed is not None:
            x = x + self.pos_embed.expand(B, -1, -1).type_as(x).to(x.device).clone().detach()
        x = self.pos_drop(x)

        # input: region partition
        nt, t = self.lg_num_region_size[0], self.lg_region_size[0]
        nh, h = self.lg_num_region_size[1], self.lg_region_size[1]
        nw, w = self.lg_num_region_size[2], self.lg_region_size[2]
        b = x.size(0)
        x = rearrange(x, 'b (nt t nh h nw w) c -> b (nt nh nw) (t h w) c', nt=nt,nh=nh,nw=nw,t=t,h=h,w=w)
        # add region (i.e., representative) tokens
        region_tokens = repeat(self.lg_region_tokens, 'n c -> b n 1 c', b=b)
        x = torch.cat([region_tokens, x], dim=2) # (b, nt*nh*nw, 1+thw, c)
        x = rearrange(x, 'b n s c -> (b n) s c') # s = 1 + thw
        # run through each block
        for blk in self.blocks:
            x = blk(x, b) # (b*n, s, c)

        x = rearrange(x, '(b n) s c -> b n s c', b=b) # s = 1 + thw
        # token for final classification
        if self.lg_classify_token_type == 'region': # only use region tokens for classification
            x = x[:,:,0] # (b, n, c)
        elif self.lg_classify_token_type == 'org': # only use original tokens for classification
            x = rearrange(x[:,:,1:], 'b n s c -> b (n s) c') # s = thw
        else: # use all tokens for classification
            x = rearrange(x, 'b n s c -> b (n s) c') # s = 1 + thw

        x = self.norm(x)
        return self.fc_norm(x.mean(1))

    def forward(self, x, save_feature=False):
        x = self.forward_features(x)
        x = self.head(x)
        x = self.head_activation_func(x)
        return x


def vit_base_dim512_no_depth_patch16_160(pretrained=False, **kwargs):
    # (sizes shrunk: 32x32 frames, dim 16, 2 heads)
    model = VisionTransformer(
        img_size=32,
        patch_size=16, embed_dim=16, num_heads=2, mlp_ratio=4, qkv_bias=True,
        norm_layer=partial(nn.LayerNorm, eps=1e-6), **kwargs)
    return model


if __name__ == '__main__':
    # a fine-tuning step as in engine_for_finetuning.py: random clips instead of DFEW
    model = vit_base_dim512_no_depth_patch16_160(
        num_classes=7, all_frames=4, tubelet_size=2, depth=2, init_scale=0.001,
        attn_type='local_global', lg_region_size=(1, 2, 2), lg_classify_token_type='region')
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for step in range(2):
        samples = torch.randn(2, 3, 4, 32, 32)
        targets = torch.randint(0, 7, (2,))
        output = model(samples)
        loss = criterion(output, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print('step', step, 'loss', loss.item())
