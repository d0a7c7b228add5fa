"""ReCAM GAReader baseline after PR #5: reset_params fills the forget-gate chunk of a detached copy of the bias and sets it back as a new nn.Parameter."""
# outcome: ok
# source: https://github.com/boyuanzheng010/SemEval2021-Reading-Comprehension-of-Abstract-Meaning/pull/5
# repo: boyuanzheng010/SemEval2021-Reading-Comprehension-of-Abstract-Meaning
# category: leaf
# twin: b018_recam_gareader_lstm_bias_chunk_fill.py
import random
import time
import types

import numpy as np
from tqdm import tqdm

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


# ---- Baselines/Models/UnOrderedLSTM.py, as PR #5 fixed it ----
from torch.nn.utils.rnn import pack_padded_sequence, PackedSequence


def hotfix_pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    lengths = lengths.cpu()
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = torch.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)

    data, batch_sizes = \
        torch._C._VariableFunctions._pack_padded_sequence(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices)


class LSTM(nn.Module):
    def __init__(
        self,
        input_size,
        hidden_size,
        batch_first=False,
        num_layers=1,
        bidirectional=False,
        dropout=0.2,
    ):
        super(LSTM, self).__init__()

        self.rnn = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bidirectional=bidirectional,
            batch_first=batch_first,
        )
        self.reset_params()
        self.dropout = nn.Dropout(p=dropout)

    def reset_params(self):
        for i in range(self.rnn.num_layers):
            nn.init.orthogonal_(getattr(self.rnn, f"weight_hh_l{i}"))
            nn.init.kaiming_normal_(getattr(self.rnn, f"weight_ih_l{i}"))
            nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}"), val=0)
            nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}"), val=0)
            bias = getattr(self.rnn, f"bias_hh_l{i}").detach()
            bias.chunk(4)[1].fill_(1)
            with torch.no_grad():
                setattr(self.rnn, f"bias_hh_l{i}",nn.Parameter(bias))

            if self.rnn.bidirectional:
                nn.init.orthogonal_(getattr(self.rnn, f"weight_hh_l{i}_reverse"))
                nn.init.kaiming_normal_(getattr(self.rnn, f"weight_ih_l{i}_reverse"))
                nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}_reverse"), val=0)
                nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}_reverse"), val=0)
                bias = getattr(self.rnn, f"bias_hh_l{i}_reverse").detach()
                bias.chunk(4)[1].fill_(1)
                with torch.no_grad():
                    setattr(self.rnn, f"bias_hh_l{i}_reverse",nn.Parameter(bias))

    def forward(self, x, x_len):
        # x: [batch_size, seq_len, dim], x_len:[batch_size]
        x_len_sorted, x_idx = torch.sort(x_len, descending=True)
        x_sorted = torch.index_select(x, dim=0, index=x_idx)
        sorted_x, x_ori_idx = torch.sort(x_idx)

        # x_packed = nn.utils.rnn.pack_padded_sequence(
        #     x_sorted, x_len_sorted, batch_first=True
        # )
        x_packed = hotfix_pack_padded_sequence(
            x_sorted, x_len_sorted, batch_first=True
        )
        x_packed, (hidden, c) = self.rnn(x_packed)

        x = nn.utils.rnn.pad_packed_sequence(x_packed, batch_first=True)[0]
        x = x.index_select(dim=0, index=x_ori_idx)

        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        # hidden = hidden.permute(1, 0, 2).contiguous().view(-1,
        #                                          hidden.size(0) * hidden.size(2)).squeeze()
        hidden = hidden.index_select(dim=0, index=x_ori_idx)

        return hidden, x


# ---- Baselines/Models/Linear.py ----
class Linear(nn.Module):
    def __init__(self, in_features, out_features):
        super(Linear, self).__init__()

        self.linear = nn.Linear(in_features=in_features,
                                out_features=out_features)
        self.init_params()

    def init_params(self):
        nn.init.kaiming_normal_(self.linear.weight.data)
        nn.init.constant_(self.linear.bias.data, 0)

    def forward(self, x):

        # x: [batch_size, seq_len, in_features]
        x = self.linear(x)
        # x: [batch_size, seq_len, out_features]
        return x


# ---- Baselines/Models/MLPAttention.py ----
class MLPAttention(nn.Module):

    def __init__(self, dim, dropout):
        super(MLPAttention, self).__init__()

        self.Q_W = Linear(dim, dim)
        self.K_W = Linear(dim, dim)
        self.V_W = Linear(dim, dim)

        self.tanh = nn.Tanh()
        self.V = Linear(dim, 1)

        self.dropout = nn.Dropout(dropout)


    def forward(self, Q, K, V):
        # Q: [batch_size, dim]
        # K: [batch_size, seq_len, dim]
        # V: [batch_size, seq_len, dim]

        Q = self.dropout(self.Q_W(Q)) # [batch_size, dim]
        K = self.dropout(self.K_W(K)) # [batch_size, seq_len, dim]
        V = self.dropout(self.V_W(V)) # [batch_size, seq_len, dim]

        Q = Q.unsqueeze(1) # [batch_size, 1, dim]
        M = self.dropout(self.tanh(Q + K))  # [batch_size, seq_len, dim]
        scores = self.dropout(self.V(M)) # [batch_size, seq_len, 1]
        scores = F.softmax(scores, dim=1) # [batch_size, seq_len, 1]

        R = self.dropout(V * scores) # [batch_size, seq_len, dim]

        feat = torch.sum(R, dim=1)  # [batch_size, dim]

        return feat





# ---- Baselines/GAReader/GAReader.py ----
def gated_attention(article, question):
    """
    Args:
        article: [batch_size, article_len , dim]
        question: [batch_size, question_len, dim]
    Returns:
        question_to_article: [batch_size, article_len, dim]
    """
    question_att = question.permute(0, 2, 1)
    # question : [batch_size * dim * question_len]

    att_matrix = torch.bmm(article, question_att)
    # att_matrix: [batch_size * article_len * question_len]

    att_weights = F.softmax(att_matrix.view(-1, att_matrix.size(-1)), dim=1).view_as(att_matrix)
    # att_weights: [batch_size, article_len, question_len]

    question_rep = torch.bmm(att_weights, question)
    # question_rep : [batch_size, article_len, dim]

    question_to_article = torch.mul(article, question_rep)
    # question_to_article: [batch_size, article_len, dim]

    return question_to_article



class GAReader(nn.Module):
    """
    Some difference between our GAReader and the original GAReader
    1. The query GRU is shared across hops.
    2. Dropout is applied to all hops (including the initial hop).
    3. Gated-attention is applied at the final layer as well.
    4. No character-level embeddings are used.
    """

    def __init__(self, embedding_dim, output_dim, hidden_size, rnn_num_layers, ga_layers, bidirectional, dropout, word_emb):
        super(GAReader, self).__init__()

        self.word_embedding = nn.Embedding.from_pretrained(word_emb, freeze=False)

        self.rnn = LSTM(embedding_dim, hidden_size, True,
                        rnn_num_layers, bidirectional, dropout)

        self.ga_rnn = LSTM(hidden_size * 2, hidden_size, True,
                           rnn_num_layers, bidirectional, dropout)

        self.ga_layers = ga_layers

        self.mlp_att = MLPAttention(hidden_size * 2, dropout)

        self.dot_layer = MLPAttention(hidden_size * 2, dropout)

        self.final_liear = Linear(hidden_size * 10, output_dim)


        self.dropout = nn.Dropout(dropout)

    def forward(self, batch):

        article, article_lengths = batch.article
        # article: [article_len, batch_size], article_lengths: [batch_size]

        question, question_lengths = batch.question
        # question: [question_len, batch_size], question_lengths: [batch_size]

        option0, option0_lengths = batch.option_0
        option1, option1_lengths = batch.option_1
        option2, option2_lengths = batch.option_2
        option3, option3_lengths = batch.option_3
        option4, option4_lengths = batch.option_4
        # option: [option_len, batch_size]

        article_emb = self.dropout(self.word_embedding(article))
        # article_emb: [article_len, batch_size, emd_dim]

        question_emb = self.dropout(self.word_embedding(question))
        # question_emb: [question_len, batch_size, emd_dim]

        option0_emb = self.dropout(self.word_embedding(option0))
        option1_emb = self.dropout(self.word_embedding(option1))
        option2_emb = self.dropout(self.word_embedding(option2))
        option3_emb = self.dropout(self.word_embedding(option3))
        option4_emb = self.dropout(self.word_embedding(option4))
        # option: [option_len, batch_size, emd_dim]

        article_emb = article_emb.permute(1, 0, 2)  # [batch_size, seq_len, dim]
        question_emb = question_emb.permute(1, 0, 2)
        option0_emb = option0_emb.permute(1, 0, 2)
        option1_emb = option1_emb.permute(1, 0, 2)
        option2_emb = option2_emb.permute(1, 0, 2)
        option3_emb = option3_emb.permute(1, 0, 2)
        option4_emb = option4_emb.permute(1, 0, 2)

        question_hidden, question_out = self.rnn(question_emb, question_lengths)
        # question_out: [batch_size, question_len, hidden_size * 2]
        # question_hidden: [batch_size, hidden_size * 2]

        option0_hidden, option0_out = self.rnn(option0_emb, option0_lengths)
        option1_hidden, option1_out = self.rnn(option1_emb, option1_lengths)
        option2_hidden, option2_out = self.rnn(option2_emb, option2_lengths)
        option3_hidden, option3_out = self.rnn(option3_emb, option3_lengths)
        option4_hidden, option4_out = self.rnn(option4_emb, option4_lengths)
        # option_out: [batch_size, option_len,  hidden_size * 2]

        _, article_out = self.rnn(article_emb, article_lengths)
        # article_out: [article_len, batch_size, hidden_size * 2]


        for layer in range(self.ga_layers):

            article_emb = self.dropout(gated_attention(article_out, question_out))
            # article_emb: [batch_size, article_len, hidden_size * 2]

            _, article_out = self.ga_rnn(article_emb, article_lengths)
            # article_out: [batch_size, article_len, hidden_size * 2]

        ATT_article_question = self.dropout(self.mlp_att(question_hidden, article_out, article_out))
        # ATT_article_question: [batch_size, hidden_size * 2]

        # 融合 option 信息 [batch_size, hidden_size * 2]
        ATT_option0 = self.dropout(self.dot_layer(
            ATT_article_question, option0_out, option0_out))
        ATT_option1 = self.dropout(self.dot_layer(
            ATT_article_question, option1_out, option1_out))
        ATT_option2 = self.dropout(self.dot_layer(
            ATT_article_question, option2_out, option2_out))
        ATT_option3 = self.dropout(self.dot_layer(
            ATT_article_question, option3_out, option3_out))
        ATT_option4 = self.dropout(self.dot_layer(
            ATT_article_question, option4_out, option4_out))

        all_infomation = torch.cat((ATT_option0, ATT_option1, ATT_option2, ATT_option3, ATT_option4), dim=1)

        logit = self.dropout(self.final_liear(all_infomation))

        return logit


























# ---- Baselines/Run_GAReader.py: the training step of train(), on random batches instead of the ReCAM torchtext iterators ----
def random_batch(batch_size=2, vocab_size=30):
    def field(length):
        lengths = torch.randint(2, length + 1, (batch_size,))
        lengths[0] = length
        return torch.randint(0, vocab_size, (length, batch_size)), lengths

    return types.SimpleNamespace(
        article=field(12), question=field(6),
        option_0=field(3), option_1=field(3), option_2=field(3), option_3=field(3), option_4=field(3),
        label=torch.randint(0, 5, (batch_size,)))


def train(epoch_num, model, train_dataloader, optimizer, criterion, label_list, clip):
    model.train()
    global_step = 0
    for epoch in range(int(epoch_num)):
        print(f'---------------- Epoch: {epoch + 1:02} ----------')

        epoch_loss = 0
        train_steps = 0

        for step, batch in enumerate(tqdm(train_dataloader, desc="Iteration")):

            optimizer.zero_grad()

            logits = model(batch)

            loss = criterion(logits.view(-1, len(label_list)), batch.label)

            loss.backward()

            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            global_step += 1

            epoch_loss += loss.item()
            train_steps += 1


if __name__ == "__main__":
    label_list = ["0", "1", "2", "3", "4"]
    word_emb = torch.randn(30, 16)
    model = GAReader(16, len(label_list), 8, 1, 1, True, 0.5, word_emb)
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    criterion = nn.CrossEntropyLoss()
    train(1, model, [random_batch() for _ in range(2)], optimizer, criterion, label_list, 10)
