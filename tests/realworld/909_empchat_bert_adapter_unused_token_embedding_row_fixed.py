"""EmpatheticDialogues BertAdapter, fixed as the reporter's linked answer does: the loop writing `embeddings.weight[token_idx] = rand_embedding` into the word-embedding Parameters runs under torch.no_grad(), then training proceeds."""
# outcome: ok
# source: https://github.com/facebookresearch/EmpatheticDialogues/issues/46
# repo: facebookresearch/EmpatheticDialogues
# category: leaf
# twin: 908_empchat_bert_adapter_unused_token_embedding_row.py
# pytorch_pretrained_bert and ParlAI are not installed: BertModel and BertWrapper below are small
# stand-ins written for this case (random weights, the attributes and call signatures the
# adapter uses); the training loop is retrieval_train.py's train() on random token batches.
import logging
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

# ---- empchat/datasets/tokens.py ----
UNK_TOKEN = "<UNK>"
PAD_TOKEN = "<PAD>"
PARLAI_PAD_TOKEN = "__PAD__"
EMPTYPERSONA_TOKEN = "<PER>"
START_OF_COMMENT = "<SOC>"
END_OF_COMMENT = "<EOC>"
BERT_ID = "bert-base-cased"


# ---- stand-in for pytorch_pretrained_bert.BertModel ----
class _BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)

    def forward(self, input_ids, token_type_ids):
        return self.LayerNorm(self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids))


class BertModel(nn.Module):
    def __init__(self, vocab_size=30, hidden=16):
        super().__init__()
        self.embeddings = _BertEmbeddings(vocab_size, hidden)
        self.encoder = nn.TransformerEncoderLayer(hidden, 2, 32, dropout=0.0, batch_first=True)
        self.pooler = nn.Linear(hidden, hidden)

    @classmethod
    def from_pretrained(cls, name):
        return cls()

    def forward(self, input_ids, token_type_ids, attention_mask):
        h = self.encoder(self.embeddings(input_ids, token_type_ids), src_key_padding_mask=~attention_mask.bool())
        return [h], torch.tanh(self.pooler(h[:, 0]))


# ---- stand-in for parlai.agents.bert_ranker.helpers.BertWrapper ----
class BertWrapper(nn.Module):
    def __init__(self, bert_model, output_dim, add_transformer_layer=False, layer_pulled=-1):
        super().__init__()
        self.layer_pulled = layer_pulled
        self.bert_model = bert_model
        self.additional_linear_layer = nn.Linear(bert_model.pooler.out_features, output_dim)

    def forward(self, token_ids, segment_ids, attention_mask):
        output_bert, output_pooler = self.bert_model(token_ids, segment_ids, attention_mask)
        layer_of_interest = output_bert[self.layer_pulled]
        embeddings = layer_of_interest[:, 0, :]
        result = self.additional_linear_layer(embeddings)
        result = result + 0 * torch.sum(output_pooler)
        return result


# ---- empchat/bert_local.py ----
class BertAdapter(nn.Module):
    def __init__(self, opt, dictionary):
        super().__init__()
        self.opt = opt
        self.pad_idx = dictionary[PAD_TOKEN]
        self.ctx_bert = BertWrapper(
            bert_model=BertModel.from_pretrained(BERT_ID),
            output_dim=opt.bert_dim,
            add_transformer_layer=opt.bert_add_transformer_layer,
        )
        self.cand_bert = BertWrapper(
            bert_model=BertModel.from_pretrained(BERT_ID),
            output_dim=opt.bert_dim,
            add_transformer_layer=opt.bert_add_transformer_layer,
        )

        # Reset the embeddings for the until-now unused BERT tokens
        orig_embedding_weights = BertModel.from_pretrained(
            BERT_ID
        ).embeddings.word_embeddings.weight
        mean_val = orig_embedding_weights.mean().item()
        std_val = orig_embedding_weights.std().item()
        unused_tokens = [START_OF_COMMENT, PARLAI_PAD_TOKEN, EMPTYPERSONA_TOKEN]
        unused_token_idxes = [dictionary[token] for token in unused_tokens]
        with torch.no_grad():
            for token_idx in unused_token_idxes:
                rand_embedding = orig_embedding_weights.new_empty(
                    (1, orig_embedding_weights.size(1))
                ).normal_(mean=mean_val, std=std_val)
                for embeddings in [
                    self.ctx_bert.bert_model.embeddings.word_embeddings,
                    self.cand_bert.bert_model.embeddings.word_embeddings,
                ]:
                    embeddings.weight[token_idx] = rand_embedding
        self.ctx_bert.bert_model.embeddings.word_embeddings.weight.detach_()
        self.cand_bert.bert_model.embeddings.word_embeddings.weight.detach_()

    def forward(self, context_w, cands_w):
        if context_w is not None:
            context_segments = torch.zeros_like(context_w)
            context_mask = context_w != self.pad_idx
            context_h = self.ctx_bert(
                token_ids=context_w,
                segment_ids=context_segments,
                attention_mask=context_mask,
            )
            if self.opt.normalize_sent_emb:
                context_h = context_h / context_h.norm(2, dim=1, keepdim=True)
        else:
            context_h = None
        if cands_w is not None:
            cands_segments = torch.zeros_like(cands_w)
            cands_mask = cands_w != self.pad_idx
            cands_h = self.cand_bert(
                token_ids=cands_w, segment_ids=cands_segments, attention_mask=cands_mask
            )
            if self.opt.normalize_sent_emb:
                cands_h = cands_h / cands_h.norm(2, dim=1, keepdim=True)
        else:
            cands_h = None
        return context_h, cands_h


# ---- empchat/models.py ----
def create(opt, dict_words):
    if opt.model == "bert":
        return BertAdapter(opt, dict_words)
    else:
        raise ValueError("Model not recognized!")


# ---- retrieval_train.py ----
def loss_fn(ctx, labels):
    assert (
        ctx.size() == labels.size()
    ), f"ctx.size : {ctx.size()}, labels.size: {labels.size()}"
    # both are [batch, dim]
    batch_size = ctx.size(0)
    dot_products = ctx.mm(labels.t())
    # [batch, batch]
    log_prob = F.log_softmax(dot_products, dim=1)
    targets = log_prob.new_empty(batch_size).long()
    targets = torch.arange(batch_size, out=targets)
    loss = F.nll_loss(log_prob, targets)
    nb_ok = (log_prob.max(dim=1)[1] == targets).float().sum()
    return loss, nb_ok


def train(epoch, start_time, model, optimizer, opt_, data_loader):
    """Run through one epoch of model training with the provided data loader."""
    model.train()
    # Initialize meters + timers
    train_loss = 0
    nb_ok = 0
    nb_exs = 0
    nb_losses = 0
    epoch_start = time.time()
    # Run one epoch
    for idx, ex in enumerate(data_loader, 1):
        params = [
            field.cuda(non_blocking=True)
            if opt_.cuda
            else field
            if field is not None
            else None
            for field in ex
        ]
        loss, ok = loss_fn(*model(*params))
        nb_ok += ok
        nb_exs += ex[0].size(0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_loss += loss.sum().item()
        nb_losses += 1
        if idx % opt_.display_iter == 0 or idx == len(data_loader):
            avg_loss = train_loss / nb_losses
            acc = 100 * nb_ok / nb_exs
            elapsed = time.time() - start_time
            logging.info(
                f"train: Epoch = {epoch} | iter = {idx}/{len(data_loader)} | loss = "
                f"{avg_loss:.3f} | batch P@1 = {acc:.2f} % | elapsed time = "
                f"{elapsed:.2f} (s)"
            )
            train_loss = 0
            nb_losses = 0


if __name__ == "__main__":
    torch.manual_seed(0)
    opt = SimpleNamespace(model="bert", bert_dim=8, bert_add_transformer_layer=False,
                          normalize_sent_emb=False, cuda=False, display_iter=1,
                          optimizer="adamax", learning_rate=8e-4)
    # the BERT token ids of the dictionary entries the adapter looks up
    dict_words = {UNK_TOKEN: 1, PAD_TOKEN: 0, PARLAI_PAD_TOKEN: 3, EMPTYPERSONA_TOKEN: 4,
                  START_OF_COMMENT: 2, END_OF_COMMENT: 5}
    net = create(opt, dict_words)
    optimizer = optim.Adamax(net.parameters(), lr=opt.learning_rate)
    contexts = torch.randint(1, 30, (8, 6))
    cands = torch.randint(1, 30, (8, 5))
    data_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(contexts, cands), batch_size=4)
    train(0, time.time(), net, optimizer, opt, data_loader)
