"""SoftMaskedBert caches `self.mask_e = self.embedding(mask_token_id)` once in `__init__`, with its graph through BERT's embedding LayerNorm; every step mixes it into the input and calls `loss.backward(retain_graph=True)`, so the second step's backward reaches the cached graph whose LayerNorm weights Adam already stepped."""
# outcome: inplace-error
# source: https://github.com/hiyoung123/SoftMaskedBert/issues/16
# repo: hiyoung123/SoftMaskedBert
# category: iteration
# twin: 473_soft_masked_bert_mask_embedding_cached_fixed.py
# The thread: "[torch.FloatTensor [768]] is at version 3; expected version 2" (the embeddings' LayerNorm
# weight); fixed by `self.mask_e = self.embedding(mask_token_id).detach()`. A small BERT (embeddings
# with LayerNorm, a transformer encoder) stands in for the pretrained chinese_wwm BertModel.
import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam


# ---- a tiny stand-in for transformers' BertModel: `.embeddings`, `.encoder`, `.config` ----
class BertConfig:
    def __init__(self, vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=32, type_vocab_size=2, is_decoder=False):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.is_decoder = is_decoder

    def to_dict(self):
        return dict(self.__dict__)


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids=None, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = self.LayerNorm(embeddings)  # saved-by
        embeddings = self.dropout(embeddings)
        return embeddings


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([
            nn.TransformerEncoderLayer(config.hidden_size, config.num_attention_heads, 4 * config.hidden_size, dropout=0.1, batch_first=True)
            for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, head_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        key_padding_mask = None
        if attention_mask is not None:
            key_padding_mask = attention_mask[:, 0, 0, :] < -1.0
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, src_key_padding_mask=key_padding_mask)
        return (hidden_states,)


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)


class BertTokenizer:
    mask_token_id = 3


# ---- model/decotor.py ----
class BiGRU(nn.Module):
    """
    decotor 使用 BiGRU
    """
    def __init__(self, embedding_size, hidden, n_layers, dropout=0.0):
        super(BiGRU, self).__init__()
        self.rnn = nn.GRU(embedding_size, hidden, num_layers=n_layers,
                          bidirectional=True, dropout=dropout, batch_first=True)
        self.sigmoid = nn.Sigmoid()
        self.linear = nn.Linear(hidden*2, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        prob = self.sigmoid(self.linear(out))
        return prob


# ---- model/soft_masked_bert.py ----
class SoftMaskedBert(nn.Module):
    """
    Soft-Masked Bert
    论文：https://arxiv.org/pdf/2005.07421.pdf
    """
    def __init__(self, bert, tokenizer, hidden, layer_n, device):
        super(SoftMaskedBert, self).__init__()
        # self.bert = bert
        # self.tokenizer = tokenizer
        self.embedding = bert.embeddings.to(device)
        self.config = bert.config
        embedding_size = self.config.to_dict()['hidden_size']

        self.detector = BiGRU(embedding_size, hidden, layer_n)
        self.corrector = bert.encoder
        mask_token_id = torch.tensor([[tokenizer.mask_token_id]]).to(device)
        self.mask_e = self.embedding(mask_token_id)
        self.linear = nn.Linear(embedding_size, self.config.vocab_size)
        self.softmax = nn.LogSoftmax(dim=-1)

    def forward(self, input_ids, input_mask, segment_ids):
        e = self.embedding(input_ids=input_ids, token_type_ids=segment_ids)
        p = self.detector(e)
        e_ = p * self.mask_e + (1-p) * e
        _, _, _, _, \
        _, \
        head_mask, \
        encoder_hidden_states, \
        encoder_extended_attention_mask= self._init_inputs(input_ids, input_mask)
        h = self.corrector(e_,
                           attention_mask=encoder_extended_attention_mask,
                           head_mask=head_mask,
                           encoder_hidden_states=encoder_hidden_states,
                           encoder_attention_mask=encoder_extended_attention_mask)
        h = h[0] + e
        out = self.softmax(self.linear(h))
        return out, p

    def _init_inputs(self,
                    input_ids=None,
                    attention_mask=None,
                    token_type_ids=None,
                    position_ids=None,
                    head_mask=None,
                    inputs_embeds=None,
                    encoder_hidden_states=None,
                    encoder_attention_mask=None,
                    ):
        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
        elif input_ids is not None:
            input_shape = input_ids.size()
        elif inputs_embeds is not None:
            input_shape = inputs_embeds.size()[:-1]
        else:
            raise ValueError("You have to specify either input_ids or inputs_embeds")

        device = input_ids.device if input_ids is not None else inputs_embeds.device

        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=device)

        if attention_mask.dim() == 3:
            extended_attention_mask = attention_mask[:, None, :, :]
        elif attention_mask.dim() == 2:
            if self.config.is_decoder:
                batch_size, seq_length = input_shape
                seq_ids = torch.arange(seq_length, device=device)
                causal_mask = seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= seq_ids[None, :, None]
                causal_mask = causal_mask.to(
                    attention_mask.dtype
                )  # causal and attention masks must have same type with pytorch version < 1.3
                extended_attention_mask = causal_mask[:, None, :, :] * attention_mask[:, None, None, :]
            else:
                extended_attention_mask = attention_mask[:, None, None, :]
        else:
            raise ValueError(
                "Wrong shape for input_ids (shape {}) or attention_mask (shape {})".format(
                    input_shape, attention_mask.shape
                )
            )

        extended_attention_mask = extended_attention_mask.to(dtype=next(self.parameters()).dtype)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0

        if self.config.is_decoder and encoder_hidden_states is not None:
            encoder_batch_size, encoder_sequence_length, _ = encoder_hidden_states.size()
            encoder_hidden_shape = (encoder_batch_size, encoder_sequence_length)
            if encoder_attention_mask is None:
                encoder_attention_mask = torch.ones(encoder_hidden_shape, device=device)

            if encoder_attention_mask.dim() == 3:
                encoder_extended_attention_mask = encoder_attention_mask[:, None, :, :]
            elif encoder_attention_mask.dim() == 2:
                encoder_extended_attention_mask = encoder_attention_mask[:, None, None, :]
            else:
                raise ValueError("Wrong shape for encoder_hidden_shape")

            encoder_extended_attention_mask = encoder_extended_attention_mask.to(
                dtype=next(self.parameters()).dtype
            )  # fp16 compatibility
            encoder_extended_attention_mask = (1.0 - encoder_extended_attention_mask) * -10000.0
        else:
            encoder_extended_attention_mask = None

        if head_mask is not None:
            head_mask = head_mask.to(
                dtype=next(self.parameters()).dtype
            )  # switch to fload if need + fp16 compatibility
        else:
            head_mask = [None] * self.config.num_hidden_layers

        return input_ids, position_ids, token_type_ids, inputs_embeds, \
               extended_attention_mask, head_mask, encoder_hidden_states, encoder_extended_attention_mask


# ---- optim_schedule.py ----
class ScheduledOptim():
    '''A simple wrapper class for learning rate scheduling'''

    def __init__(self, optimizer, d_model, n_warmup_steps):
        self._optimizer = optimizer
        self.n_warmup_steps = n_warmup_steps
        self.n_current_steps = 0
        self.init_lr = np.power(d_model, -0.5)

    def step_and_update_lr(self):
        "Step with the inner optimizer"
        self._update_learning_rate()
        self._optimizer.step()  # error: IPL007

    def zero_grad(self):
        "Zero out the gradients by the inner optimizer"
        self._optimizer.zero_grad()

    def _get_lr_scale(self):
        return np.min([
            np.power(self.n_current_steps, -0.5),
            np.power(self.n_warmup_steps, -1.5) * self.n_current_steps])

    def _update_learning_rate(self):
        ''' Learning rate scheduling per step '''

        self.n_current_steps += 1
        lr = self.init_lr * self._get_lr_scale()

        for param_group in self._optimizer.param_groups:
            param_group['lr'] = lr


# ---- train.py (the trainer; random token batches instead of the SIGHAN data, no tqdm) ----
class SoftMaskedBertTrainer():
    def __init__(self, bert, tokenizer, device, hidden=256, layer_n=1, lr=2e-5, gama=0.8, betas=(0.9, 0.999), weight_decay=0.01, warmup_steps=10000):

        self.device = device
        self.tokenizer = tokenizer
        self.model = SoftMaskedBert(bert, self.tokenizer, hidden, layer_n, self.device).to(self.device)

        optim = Adam(self.model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
        self.optim_schedule = ScheduledOptim(optim, hidden, n_warmup_steps=warmup_steps)
        self.criterion_c = nn.NLLLoss()
        self.criterion_d = nn.BCELoss()
        self.gama = gama
        self.log_freq = 100

    def train(self, train_data, epoch):
        self.model.train()
        return self.iteration(epoch, train_data)

    def iteration(self, epoch, data_loader, train=True):
        str_code = "train" if train else "val"

        avg_loss = 0.0
        total_element = 0
        c_correct = 0
        d_correct = 0

        for i, data in enumerate(data_loader):
            # 0. batch_data will be sent into the device(GPU or cpu)
            data = {key: value.to(self.device) for key, value in data.items()}

            out, prob = self.model(data["input_ids"], data["input_mask"], data["segment_ids"]) #prob [batch_size, seq_len, 1]
            prob = prob.reshape(-1, prob.shape[1])
            loss_d = self.criterion_d(prob, data['label'].float())
            loss_c = self.criterion_c(out.transpose(1, 2), data["output_ids"])
            loss = self.gama * loss_c + (1-self.gama) * loss_d

            if train:
                self.optim_schedule.zero_grad()
                loss.backward(retain_graph=True)
                self.optim_schedule.step_and_update_lr()

            out = out.argmax(dim=-1)
            c_correct += sum([out[i].equal(data['output_ids'][i]) for i in range(len(out))])
            prob = torch.round(prob).long()
            d_correct += sum([prob[i].equal(data['label'][i]) for i in range(len(prob))])

            avg_loss += loss.item()
            total_element += len(data)

        print("EP%d_%s, avg_loss=" % (epoch, str_code), avg_loss / len(data_loader), "d_acc=",
              d_correct / total_element, "c_acc", c_correct / total_element)
        return avg_loss / len(data_loader)


if __name__ == '__main__':
    device = torch.device('cpu')
    config = BertConfig()
    tokenizer = BertTokenizer()
    bert = BertModel(config)
    trainer = SoftMaskedBertTrainer(bert, tokenizer, device, hidden=8, warmup_steps=10)

    def batch(bs=4, seq_len=10):
        input_ids = torch.randint(5, config.vocab_size, (bs, seq_len))
        return {"input_ids": input_ids, "input_mask": torch.ones(bs, seq_len), "segment_ids": torch.zeros(bs, seq_len, dtype=torch.long),
                "output_ids": torch.randint(5, config.vocab_size, (bs, seq_len)), "label": torch.randint(0, 2, (bs, seq_len))}

    train_data = [batch() for _ in range(3)]
    for e in range(2):
        trainer.train(train_data, e)
