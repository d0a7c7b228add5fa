"""ALBEF pretraining (image-text contrastive part): the image/text feature queues are registered buffers that the ITA loss reads (`torch.cat([feat_m.t(), self.image_queue.clone().detach()])`), and `_dequeue_and_enqueue` overwrites a slice of them in place (under @torch.no_grad) right after the loss is built and before backward; the learnable temperature `self.temp` (a Parameter) is clamped in place under no_grad at the top of forward, and the ITM negative-sampling weights get `fill_diagonal_(0)` under no_grad."""
# outcome: ok
# source: https://github.com/salesforce/ALBEF/blob/main/models/model_pretrain.py
# repo: salesforce/ALBEF
# category: iteration
# CPU run: VisionTransformer / BertForMaskedLM replaced by tiny inline stand-ins (patch linear
# encoder, embedding + transformer-free text encoder, concat fusion); no DeiT download;
# concat_all_gather is the single-process identity; the MLM branch is left out; random images
# and token ids; three optimizer steps.
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


# ---- stand-ins for models/vit.py and models/xbert.py ----
class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=8, embed_dim=32, depth=1, num_heads=2,
                 mlp_ratio=4, qkv_bias=True, norm_layer=None):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.norm = norm_layer(embed_dim)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.norm(x)


class _Out:
    def __init__(self, last_hidden_state):
        self.last_hidden_state = last_hidden_state


class _Bert(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.fusion = nn.Linear(2 * hidden, hidden)

    def forward(self, input_ids=None, attention_mask=None, encoder_embeds=None,
                encoder_hidden_states=None, encoder_attention_mask=None,
                return_dict=True, mode='text'):
        if mode == 'text':
            h = torch.tanh(self.dense(self.word_embeddings(input_ids)))
            return _Out(h * attention_mask.unsqueeze(-1))
        img = encoder_hidden_states[:, :1, :].expand(-1, encoder_embeds.shape[1], -1)
        return _Out(torch.tanh(self.fusion(torch.cat([encoder_embeds, img], dim=-1))))


class _Config:
    def __init__(self, hidden_size, vocab_size):
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bert = _Bert(config.vocab_size, config.hidden_size)


class _Text:
    def __init__(self, input_ids, attention_mask):
        self.input_ids = input_ids
        self.attention_mask = attention_mask


# ---- models/model_pretrain.py ----
class ALBEF(nn.Module):
    def __init__(self,
                 text_encoder = None,
                 tokenizer = None,
                 config = None,
                 temp = 0.07,
                 init_deit = True
                 ):
        super().__init__()

        self.tokenizer = tokenizer
        embed_dim = config['embed_dim']

        self.visual_encoder = VisionTransformer(
            img_size=config['image_res'], patch_size=8, embed_dim=32, depth=1, num_heads=2,
            mlp_ratio=4, qkv_bias=True, norm_layer=partial(nn.LayerNorm, eps=1e-6))

        vision_width = config['vision_width']
        bert_config = _Config(32, 50)

        self.text_encoder = BertForMaskedLM(bert_config)

        text_width = self.text_encoder.config.hidden_size
        self.vision_proj = nn.Linear(vision_width, embed_dim)
        self.text_proj = nn.Linear(text_width, embed_dim)

        self.temp = nn.Parameter(torch.ones([]) * config['temp'])
        self.queue_size = config['queue_size']
        self.momentum = config['momentum']
        self.itm_head = nn.Linear(text_width, 2)

        # create momentum models
        self.visual_encoder_m = VisionTransformer(
            img_size=config['image_res'], patch_size=8, embed_dim=32, depth=1, num_heads=2,
            mlp_ratio=4, qkv_bias=True, norm_layer=partial(nn.LayerNorm, eps=1e-6))
        self.vision_proj_m = nn.Linear(vision_width, embed_dim)
        self.text_encoder_m = BertForMaskedLM(bert_config)
        self.text_proj_m = nn.Linear(text_width, embed_dim)

        self.model_pairs = [[self.visual_encoder,self.visual_encoder_m],
                            [self.vision_proj,self.vision_proj_m],
                            [self.text_encoder,self.text_encoder_m],
                            [self.text_proj,self.text_proj_m],
                           ]

        self.copy_params()

        # create the queue
        self.register_buffer("image_queue", torch.randn(embed_dim, self.queue_size))
        self.register_buffer("text_queue", torch.randn(embed_dim, self.queue_size))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

        self.image_queue = nn.functional.normalize(self.image_queue, dim=0)
        self.text_queue = nn.functional.normalize(self.text_queue, dim=0)

    def forward(self, image, text, alpha=0):
        with torch.no_grad():
            self.temp.clamp_(0.001,0.5)

        image_embeds = self.visual_encoder(image)
        image_atts = torch.ones(image_embeds.size()[:-1],dtype=torch.long).to(image.device)

        image_feat = F.normalize(self.vision_proj(image_embeds[:,0,:]),dim=-1)

        text_output = self.text_encoder.bert(text.input_ids, attention_mask = text.attention_mask,
                                        return_dict = True, mode = 'text')
        text_embeds = text_output.last_hidden_state
        text_feat = F.normalize(self.text_proj(text_embeds[:,0,:]),dim=-1)

        # get momentum features
        with torch.no_grad():
            self._momentum_update()
            image_embeds_m = self.visual_encoder_m(image)
            image_feat_m = F.normalize(self.vision_proj_m(image_embeds_m[:,0,:]),dim=-1)
            image_feat_all = torch.cat([image_feat_m.t(),self.image_queue.clone().detach()],dim=1)
            text_output_m = self.text_encoder_m.bert(text.input_ids, attention_mask = text.attention_mask,
                                                return_dict = True, mode = 'text')
            text_feat_m = F.normalize(self.text_proj_m(text_output_m.last_hidden_state[:,0,:]),dim=-1)
            text_feat_all = torch.cat([text_feat_m.t(),self.text_queue.clone().detach()],dim=1)

            sim_i2t_m = image_feat_m @ text_feat_all / self.temp
            sim_t2i_m = text_feat_m @ image_feat_all / self.temp

            sim_targets = torch.zeros(sim_i2t_m.size()).to(image.device)
            sim_targets.fill_diagonal_(1)

            sim_i2t_targets = alpha * F.softmax(sim_i2t_m, dim=1) + (1 - alpha) * sim_targets
            sim_t2i_targets = alpha * F.softmax(sim_t2i_m, dim=1) + (1 - alpha) * sim_targets

        sim_i2t = image_feat @ text_feat_all / self.temp
        sim_t2i = text_feat @ image_feat_all / self.temp

        loss_i2t = -torch.sum(F.log_softmax(sim_i2t, dim=1)*sim_i2t_targets,dim=1).mean()
        loss_t2i = -torch.sum(F.log_softmax(sim_t2i, dim=1)*sim_t2i_targets,dim=1).mean()

        loss_ita = (loss_i2t+loss_t2i)/2

        self._dequeue_and_enqueue(image_feat_m, text_feat_m)

        ###=================================###
        # forward the positve image-text pair
        output_pos = self.text_encoder.bert(encoder_embeds = text_embeds,
                                        attention_mask = text.attention_mask,
                                        encoder_hidden_states = image_embeds,
                                        encoder_attention_mask = image_atts,
                                        return_dict = True,
                                        mode = 'fusion',
                                       )
        with torch.no_grad():
            bs = image.size(0)
            weights_i2t = F.softmax(sim_i2t[:,:bs],dim=1)
            weights_t2i = F.softmax(sim_t2i[:,:bs],dim=1)

            weights_i2t.fill_diagonal_(0)
            weights_t2i.fill_diagonal_(0)

        # select a negative image for each text
        image_embeds_neg = []
        for b in range(bs):
            neg_idx = torch.multinomial(weights_t2i[b], 1).item()
            image_embeds_neg.append(image_embeds[neg_idx])
        image_embeds_neg = torch.stack(image_embeds_neg,dim=0)

        # select a negative text for each image
        text_embeds_neg = []
        text_atts_neg = []
        for b in range(bs):
            neg_idx = torch.multinomial(weights_i2t[b], 1).item()
            text_embeds_neg.append(text_embeds[neg_idx])
            text_atts_neg.append(text.attention_mask[neg_idx])
        text_embeds_neg = torch.stack(text_embeds_neg,dim=0)
        text_atts_neg = torch.stack(text_atts_neg,dim=0)

        text_embeds_all = torch.cat([text_embeds, text_embeds_neg],dim=0)
        text_atts_all = torch.cat([text.attention_mask, text_atts_neg],dim=0)

        image_embeds_all = torch.cat([image_embeds_neg,image_embeds],dim=0)
        image_atts_all = torch.cat([image_atts,image_atts],dim=0)

        output_neg = self.text_encoder.bert(encoder_embeds = text_embeds_all,
                                        attention_mask = text_atts_all,
                                        encoder_hidden_states = image_embeds_all,
                                        encoder_attention_mask = image_atts_all,
                                        return_dict = True,
                                        mode = 'fusion',
                                       )

        vl_embeddings = torch.cat([output_pos.last_hidden_state[:,0,:], output_neg.last_hidden_state[:,0,:]],dim=0)
        vl_output = self.itm_head(vl_embeddings)

        itm_labels = torch.cat([torch.ones(bs,dtype=torch.long),torch.zeros(2*bs,dtype=torch.long)],
                               dim=0).to(image.device)
        loss_itm = F.cross_entropy(vl_output, itm_labels)

        return loss_ita, loss_itm

    @torch.no_grad()
    def copy_params(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data.copy_(param.data)  # initialize
                param_m.requires_grad = False  # not update by gradient

    @torch.no_grad()
    def _momentum_update(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data = param_m.data * self.momentum + param.data * (1. - self.momentum)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, image_feat, text_feat):
        # gather keys before updating queue
        image_feats = concat_all_gather(image_feat)
        text_feats = concat_all_gather(text_feat)

        batch_size = image_feats.shape[0]

        ptr = int(self.queue_ptr)
        assert self.queue_size % batch_size == 0  # for simplicity

        # replace the keys at ptr (dequeue and enqueue)
        self.image_queue[:, ptr:ptr + batch_size] = image_feats.T
        self.text_queue[:, ptr:ptr + batch_size] = text_feats.T
        ptr = (ptr + batch_size) % self.queue_size  # move pointer

        self.queue_ptr[0] = ptr


@torch.no_grad()
def concat_all_gather(tensor):
    # single process: all_gather over a world of one
    tensors_gather = [torch.ones_like(tensor) for _ in range(1)]
    tensors_gather[0].copy_(tensor)
    output = torch.cat(tensors_gather, dim=0)
    return output


# ---- Pretrain.py train() loop, shrunk ----
def train(model, optimizer, epoch, steps, config):
    model.train()
    for i in range(steps):
        image = torch.randn(4, 3, 16, 16)
        input_ids = torch.randint(1, 50, (4, 6))
        text = _Text(input_ids, torch.ones(4, 6, dtype=torch.long))

        optimizer.zero_grad()

        if epoch>0:
            alpha = config['alpha']
        else:
            alpha = config['alpha']*min(1,i/steps)

        loss_ita, loss_itm = model(image, text, alpha = alpha)

        loss = loss_ita + loss_itm

        loss.backward()
        optimizer.step()
        print(i, float(loss_ita), float(loss_itm))


if __name__ == '__main__':
    torch.manual_seed(0)
    config = {'embed_dim': 16, 'image_res': 16, 'vision_width': 32, 'temp': 0.07,
              'queue_size': 8, 'momentum': 0.995, 'alpha': 0.4}
    model = ALBEF(config=config, text_encoder='bert-base-uncased', tokenizer=None, init_deit=False)
    optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-4, weight_decay=0.02)
    train(model, optimizer, 0, 3, config)
