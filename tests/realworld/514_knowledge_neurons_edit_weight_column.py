"""knowledge-neurons' 6_edit_knowledge_sampled.py: to edit a fact it shifts the value vectors of the knowledge neurons, `model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]`, column writes into a BERT Linear weight done outside no_grad."""
# outcome: leaf-error
# source: https://github.com/Hunter-DDM/knowledge-neurons/issues/14
# repo: Hunter-DDM/knowledge-neurons
# category: leaf
# twin: 515_knowledge_neurons_edit_weight_column_fixed.py
import argparse
import copy
import json
import logging
import math
import os
import pickle
import random
import sys
import time
from collections import Counter
from pprint import pprint

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# set logger
logging.basicConfig(format='%(asctime)s - %(levelname)s - %(name)s -   %(message)s',
                    datefmt='%m/%d/%Y %H:%M:%S',
                    level=logging.WARNING)
logger = logging.getLogger(__name__)

# ---- stand-in for transformers' BertTokenizer (bert-base-cased's vocab, not downloaded here) ----
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + \
    ["Paris", "Rome", "Berlin", "Madrid", "Tokyo", "Lima", "Oslo", "Cairo"] + \
    ["French", "Italian", "German", "Spanish", "Japanese", "English", "Arabic", "Dutch"] + \
    ["The", "capital", "of", "is", "language", "spoken", "in", "official"] + \
    ["X%d" % i for i in range(24)]


class BertTokenizer:
    def __init__(self):
        self.vocab = {w: i for i, w in enumerate(VOCAB)}

    @classmethod
    def from_pretrained(cls, name, do_lower_case=False):
        return cls()

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self.vocab[tokens]
        return [self.vocab[t] for t in tokens]

    def convert_ids_to_tokens(self, i):
        return VOCAB[i]


# ---- custom_bert.py ----
def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def swish(x):
    return x * torch.sigmoid(x)


ACT2FN = {"gelu": gelu, "relu": torch.nn.functional.relu, "swish": swish}


class BertConfig(object):

    def __init__(self,
                vocab_size_or_config_json_file,
                hidden_size=768,
                num_hidden_layers=12,
                num_attention_heads=12,
                intermediate_size=3072,
                hidden_act="gelu",
                hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1,
                max_position_embeddings=512,
                type_vocab_size=2,
                initializer_range=0.02):
        if isinstance(vocab_size_or_config_json_file, str):
            with open(vocab_size_or_config_json_file, "r", encoding='utf-8') as reader:
                json_config = json.loads(reader.read())
            for key, value in json_config.items():
                self.__dict__[key] = value
        elif isinstance(vocab_size_or_config_json_file, int):
            self.vocab_size = vocab_size_or_config_json_file
            self.hidden_size = hidden_size
            self.num_hidden_layers = num_hidden_layers
            self.num_attention_heads = num_attention_heads
            self.hidden_act = hidden_act
            self.intermediate_size = intermediate_size
            self.hidden_dropout_prob = hidden_dropout_prob
            self.attention_probs_dropout_prob = attention_probs_dropout_prob
            self.max_position_embeddings = max_position_embeddings
            self.type_vocab_size = type_vocab_size
            self.initializer_range = initializer_range
        else:
            raise ValueError("First argument must be either a vocabulary size (int)"
                            "or the path to a pretrained model config file (str)")

    @classmethod
    def from_dict(cls, json_object):
        """Constructs a `BertConfig` from a Python dictionary of parameters."""
        config = BertConfig(vocab_size_or_config_json_file=-1)
        for key, value in json_object.items():
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file):
        """Constructs a `BertConfig` from a json file of parameters."""
        with open(json_file, "r", encoding='utf-8') as reader:
            text = reader.read()
        return cls.from_dict(json.loads(text))

    def __repr__(self):
        return str(self.to_json_string())

    def to_dict(self):
        """Serializes this instance to a Python dictionary."""
        output = copy.deepcopy(self.__dict__)
        return output

    def to_json_string(self):
        """Serializes this instance to a JSON string."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


class BertLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        """Construct a layernorm module in the TF style (epsilon inside the square root).
        """
        super(BertLayerNorm, self).__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.variance_epsilon)
        return self.weight * x + self.bias


class BertEmbeddings(nn.Module):

    def __init__(self, config):
        super(BertEmbeddings, self).__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)

        self.LayerNorm = BertLayerNorm(config.hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)

        words_embeddings = self.word_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)

        embeddings = words_embeddings + position_embeddings + token_type_embeddings

        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super(BertSelfAttention, self).__init__()
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError(
                "The hidden size (%d) is not a multiple of the number of attention "
                "heads (%d)" % (config.hidden_size, config.num_attention_heads))
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size

        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)

        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        mixed_query_layer = self.query(hidden_states)
        mixed_key_layer = self.key(hidden_states)
        mixed_value_layer = self.value(hidden_states)

        query_layer = self.transpose_for_scores(mixed_query_layer)
        key_layer = self.transpose_for_scores(mixed_key_layer)
        value_layer = self.transpose_for_scores(mixed_value_layer)

        attention_scores = torch.matmul(
            query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)

        attention_scores = attention_scores + attention_mask

        attention_probs = nn.Softmax(dim=-1)(attention_scores)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*new_context_layer_shape)

        return context_layer, attention_probs


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super(BertSelfOutput, self).__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = BertLayerNorm(config.hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, config):
        super(BertAttention, self).__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, input_tensor, attention_mask):
        self_output, att_score = self.self(input_tensor, attention_mask)
        attention_output = self.output(self_output, input_tensor)
        return attention_output, att_score


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super(BertIntermediate, self).__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act] if isinstance(config.hidden_act, str) else config.hidden_act

    def forward(self, hidden_states, tgt_pos=None, tmp_score=None, imp_pos=None, imp_op=None):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)  # [batch, max_len, nslot]
        if tmp_score is not None:
            hidden_states[:, tgt_pos, :] = tmp_score
        if imp_op == 'return':
            imp_weights = []
        if imp_pos is not None:
            for layer, pos in imp_pos:
                if imp_op == 'remove':
                    hidden_states[:, tgt_pos, pos] = 0.0
                if imp_op == 'enhance':
                    hidden_states[:, tgt_pos, pos] *= 2.0
                if imp_op == 'return':
                    imp_weights.append(hidden_states[0, tgt_pos, pos].item())

        if imp_op == 'return':
            return hidden_states, imp_weights
        else:
            return hidden_states


class BertOutput(nn.Module):
    def __init__(self, config):
        super(BertOutput, self).__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = BertLayerNorm(config.hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self, config):
        super(BertLayer, self).__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask, tgt_pos=None, tmp_score=None, imp_pos=None, imp_op=None):
        attention_output, att_score = self.attention(hidden_states, attention_mask)
        if imp_op == 'return':
            intermediate_output, imp_weights = self.intermediate(attention_output, tgt_pos=tgt_pos, tmp_score=tmp_score, imp_pos=imp_pos, imp_op=imp_op)
        else:
            intermediate_output = self.intermediate(attention_output, tgt_pos=tgt_pos, tmp_score=tmp_score, imp_pos=imp_pos, imp_op=imp_op)
        layer_output = self.output(intermediate_output, attention_output)
        if imp_op == 'return':
            return layer_output, intermediate_output, imp_weights
        else:
            return layer_output, intermediate_output


class BertEncoder(nn.Module):
    def __init__(self, config):
        super(BertEncoder, self).__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask, tgt_layer=None, tgt_pos=None, tmp_score=None, imp_pos=None, imp_op=None):
        all_encoder_layers = []
        ffn_weights = None
        if imp_op == 'return':
            imp_weights = []
        for layer_index, layer_module in enumerate(self.layer):
            if imp_pos is not None:
                imp_pos_at_this_layer = [x for x in imp_pos if x[0] == layer_index]
            else:
                imp_pos_at_this_layer = None
            if imp_op == 'return':
                if tgt_layer == layer_index:
                    hidden_states, ffn_weights, imp_weights_l = layer_module(hidden_states, attention_mask, tgt_pos=tgt_pos, tmp_score=tmp_score, imp_pos=imp_pos_at_this_layer, imp_op=imp_op)
                else:
                    hidden_states, _, imp_weights_l = layer_module(hidden_states, attention_mask, tgt_pos=tgt_pos, imp_pos=imp_pos_at_this_layer, imp_op=imp_op)
                imp_weights.extend(imp_weights_l)
            else:
                if tgt_layer == layer_index:
                    hidden_states, ffn_weights = layer_module(hidden_states, attention_mask, tgt_pos=tgt_pos, tmp_score=tmp_score, imp_pos=imp_pos_at_this_layer, imp_op=imp_op)
                else:
                    hidden_states, _ = layer_module(hidden_states, attention_mask, tgt_pos=tgt_pos, imp_pos=imp_pos_at_this_layer, imp_op=imp_op)
        all_encoder_layers.append(hidden_states)
        if imp_op == 'return':
            return all_encoder_layers, ffn_weights, imp_weights
        else:
            return all_encoder_layers, ffn_weights


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super(BertPredictionHeadTransform, self).__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = ACT2FN[config.hidden_act] if isinstance(config.hidden_act, str) else config.hidden_act
        self.LayerNorm = BertLayerNorm(config.hidden_size, eps=1e-5)

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.transform_act_fn(hidden_states)
        hidden_states = self.LayerNorm(hidden_states)
        return hidden_states


class BertLMPredictionHead(nn.Module):
    def __init__(self, config, bert_model_embedding_weights):
        super(BertLMPredictionHead, self).__init__()
        self.transform = BertPredictionHeadTransform(config)

        self.decoder = nn.Linear(bert_model_embedding_weights.size(1),
                                bert_model_embedding_weights.size(0),
                                bias=False)
        self.decoder.weight = bert_model_embedding_weights
        self.bias = nn.Parameter(torch.zeros(bert_model_embedding_weights.size(0)))

    def forward(self, hidden_states):
        hidden_states = self.transform(hidden_states)
        hidden_states = self.decoder(hidden_states) + self.bias
        return hidden_states


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config, bert_model_embedding_weights):
        super(BertOnlyMLMHead, self).__init__()
        self.predictions = BertLMPredictionHead(config, bert_model_embedding_weights)

    def forward(self, sequence_output):
        prediction_scores = self.predictions(sequence_output)
        return prediction_scores


class PreTrainedBertModel(nn.Module):

    def __init__(self, config, *inputs, **kwargs):
        super(PreTrainedBertModel, self).__init__()
        if not isinstance(config, BertConfig):
            raise ValueError(
                "Parameter config in `{}(config)` should be an instance of class `BertConfig`. "
                "To create a model from a Google pretrained model use "
                "`model = {}.from_pretrained(PRETRAINED_MODEL_NAME)`".format(
                    self.__class__.__name__, self.__class__.__name__
                ))
        self.config = config

    def init_bert_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(
                mean=0.0, std=self.config.initializer_range)
        elif isinstance(module, BertLayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()

    @classmethod
    def from_pretrained(cls, pretrained_model_name, state_dict=None, cache_dir=None, *inputs, **kwargs):
        """Stand-in: a 2-layer BERT with random weights instead of the downloaded bert-base-cased archive."""
        config = BertConfig(vocab_size_or_config_json_file=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                            initializer_range=0.5)
        model = cls(config, *inputs, **kwargs)
        return model


class BertModel(PreTrainedBertModel):

    def __init__(self, config):
        super(BertModel, self).__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.apply(self.init_bert_weights)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, tgt_pos=None, tgt_layer=None, tmp_score=None, imp_pos=None, imp_op=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)

        extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)

        extended_attention_mask = extended_attention_mask.to(dtype=next(self.parameters()).dtype)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0

        embedding_output = self.embeddings(input_ids, token_type_ids)
        if imp_op == 'return':
            encoded_layers, ffn_weights, imp_weights = self.encoder(embedding_output,
                                        extended_attention_mask,
                                        tgt_layer=tgt_layer,
                                        tgt_pos=tgt_pos,
                                        tmp_score=tmp_score,
                                        imp_pos=imp_pos,
                                        imp_op=imp_op
                                        )
        else:
            encoded_layers, ffn_weights = self.encoder(embedding_output,
                                        extended_attention_mask,
                                        tgt_layer=tgt_layer,
                                        tgt_pos=tgt_pos,
                                        tmp_score=tmp_score,
                                        imp_pos=imp_pos,
                                        imp_op=imp_op
                                        )
        sequence_output = encoded_layers[-1]
        if imp_op == 'return':
            return sequence_output, ffn_weights, imp_weights
        else:
            return sequence_output, ffn_weights


class BertForMaskedLM(PreTrainedBertModel):

    def __init__(self, config):
        super(BertForMaskedLM, self).__init__(config)
        self.bert = BertModel(config)
        self.cls = BertOnlyMLMHead(config, self.bert.embeddings.word_embeddings.weight)
        self.apply(self.init_bert_weights)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, tgt_pos=None, tgt_layer=None, tmp_score=None, tgt_label=None, imp_pos=None, imp_op=None):
        if tmp_score is not None:
            batch_size = tmp_score.shape[0]
            input_ids = input_ids.repeat(batch_size, 1)
            token_type_ids = token_type_ids.repeat(batch_size, 1)
            attention_mask = attention_mask.repeat(batch_size, 1)
        if imp_op == 'return':
            last_hidden, ffn_weights, imp_weights = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, tgt_pos=tgt_pos, tgt_layer=tgt_layer, tmp_score=tmp_score, imp_pos=imp_pos, imp_op=imp_op)  # (batch, max_len, hidden_size), (batch, max_len, ffn_size), (n_imp_pos)
        else:
            last_hidden, ffn_weights = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, tgt_pos=tgt_pos, tgt_layer=tgt_layer, tmp_score=tmp_score, imp_pos=imp_pos, imp_op=imp_op)  # (batch, max_len, hidden_size), (batch, max_len, ffn_size)
        last_hidden = last_hidden[:, tgt_pos, :]  # (batch, hidden_size)
        ffn_weights = ffn_weights[:, tgt_pos, :]  # (batch, ffn_size)
        tgt_logits = self.cls(last_hidden)  # (batch, n_vocab)
        tgt_prob = F.softmax(tgt_logits, dim=1)  # (batch, n_vocab)

        if imp_op == 'return':
            return imp_weights
        else:
            if tmp_score is None:
                # return ffn_weights at a layer and the final logits at the [MASK] position
                return ffn_weights, tgt_logits
            else:
                # return final probabilities and grad at a layer at the [MASK] position
                gradient = torch.autograd.grad(torch.unbind(tgt_prob[:, tgt_label]), tmp_score)
                return tgt_prob, gradient[0]


# ---- 6_edit_knowledge_sampled.py ----
def example2feature(example, max_seq_length, tokenizer):
    """Convert an example into input features"""
    features = []
    tokenslist = []

    ori_tokens = tokenizer.tokenize(example[0])
    # All templates are simple, almost no one will exceed the length limit.
    if len(ori_tokens) > max_seq_length - 2:
        ori_tokens = ori_tokens[:max_seq_length - 2]

    # add special tokens
    tokens = ["[CLS]"] + ori_tokens + ["[SEP]"]
    base_tokens = ["[UNK]"] + ["[UNK]"] * len(ori_tokens) + ["[UNK]"]
    segment_ids = [0] * len(tokens)

    # Generate id and attention mask
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    baseline_ids = tokenizer.convert_tokens_to_ids(base_tokens)
    input_mask = [1] * len(input_ids)

    # Pad [PAD] tokens (id in BERT-base-cased: 0) up to the sequence length.
    padding = [0] * (max_seq_length - len(input_ids))
    input_ids += padding
    baseline_ids += padding
    segment_ids += padding
    input_mask += padding

    assert len(baseline_ids) == max_seq_length
    assert len(input_ids) == max_seq_length
    assert len(input_mask) == max_seq_length
    assert len(segment_ids) == max_seq_length

    features = {
        'input_ids': input_ids,
        'input_mask': input_mask,
        'segment_ids': segment_ids,
        'baseline_ids': baseline_ids,
    }
    tokens_info = {
        "tokens":tokens,
        "relation":example[2],
        "gold_obj":example[1],
        "pred_obj": None
    }
    return features, tokens_info


def scaled_input(emb, batch_size, num_batch):
    # emb: (1, ffn_size)
    baseline = torch.zeros_like(emb)  # (1, ffn_size)

    num_points = batch_size * num_batch
    step = (emb - baseline) / num_points  # (1, ffn_size)

    res = torch.cat([torch.add(baseline, step * i) for i in range(num_points)], dim=0)  # (num_points, ffn_size)
    return res, step[0]


def pos_list2str(pos_list):
    return '@'.join([str(pos) for pos in pos_list])


def pos_str2list(pos_str):
    return [int(pos) for pos in pos_str.split('@')]


def main():
    parser = argparse.ArgumentParser()

    # Basic parameters
    parser.add_argument("--data_path",
                        default=None,
                        type=str,
                        required=True,
                        help="The input data path. Should be .json file for the MLM task. ")
    parser.add_argument("--tmp_data_path",
                        default=None,
                        type=str,
                        help="Temporary input data path. Should be .json file for the MLM task. ")
    parser.add_argument("--bert_model", default=None, type=str, required=True,
                        help="Bert pre-trained model selected in the list: bert-base-uncased, "
                            "bert-large-uncased, bert-base-cased, bert-base-multilingual, bert-base-chinese.")
    parser.add_argument("--output_dir",
                        default=None,
                        type=str,
                        required=True,
                        help="The output directory where the model predictions and checkpoints will be written.")
    parser.add_argument("--kn_dir",
                        default=None,
                        type=str,
                        required=True,
                        help="The directory where important positions are stored.")

    # Other parameters
    parser.add_argument("--max_seq_length",
                        default=128,
                        type=int,
                        help="The maximum total input sequence length after WordPiece tokenization. \n"
                            "Sequences longer than this will be truncated, and sequences shorter \n"
                            "than this will be padded.")
    parser.add_argument("--do_lower_case",
                        default=False,
                        action='store_true',
                        help="Set this flag if you are using an uncased model")
    parser.add_argument("--no_cuda",
                        default=False,
                        action='store_true',
                        help="Whether not to use CUDA when available")
    parser.add_argument("--gpus",
                        type=str,
                        default='0',
                        help="available gpus id")
    parser.add_argument('--seed',
                        type=int,
                        default=42,
                        help="random seed for initialization")
    parser.add_argument("--debug",
                        type=int,
                        default=-1,
                        help="How many examples to debug. -1 denotes no debugging")
    parser.add_argument("--norm_lambda1",
                        type=int,
                        default=1,
                        help="norm_lambda1")
    parser.add_argument("--norm_lambda2",
                        type=int,
                        default=1,
                        help="norm_lambda2")

    # parse arguments
    args = parser.parse_args()

    # set device
    if args.no_cuda or not torch.cuda.is_available():
        device = torch.device("cpu")
        n_gpu = 0
    elif len(args.gpus) == 1:
        device = torch.device("cuda:%s" % args.gpus)
        n_gpu = 1
    else:
        # !!! to implement multi-gpus
        pass
    logger.info("device: {} n_gpu: {}, distributed training: {}".format(device, n_gpu, bool(n_gpu > 1)))

    # set random seeds
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if n_gpu > 0:
        torch.cuda.manual_seed_all(args.seed)

    # save args
    os.makedirs(args.output_dir, exist_ok=True)

    # init tokenizer
    tokenizer = BertTokenizer.from_pretrained(args.bert_model, do_lower_case=args.do_lower_case)

    # Load pre-trained BERT
    logger.info("***** CUDA.empty_cache() *****")
    torch.cuda.empty_cache()
    model = BertForMaskedLM.from_pretrained(args.bert_model)
    model.to(device)

    # data parallel
    if n_gpu > 1:
        model = torch.nn.DataParallel(model)
    model.eval()

    # prepare eval set
    if os.path.exists(args.tmp_data_path):
        with open(args.tmp_data_path, 'r') as f:
            eval_bag_list_perrel = json.load(f)
    else:
        with open(args.data_path, 'r') as f:
            eval_bag_list_all = json.load(f)
        # split bag list into relations
        eval_bag_list_perrel = {}
        for bag_idx, eval_bag in enumerate(eval_bag_list_all):
            bag_rel = eval_bag[0][2].split('(')[0]
            if bag_rel not in eval_bag_list_perrel:
                eval_bag_list_perrel[bag_rel] = []
            if len(eval_bag_list_perrel[bag_rel]) >= args.debug:
                continue
            eval_bag_list_perrel[bag_rel].append(eval_bag)
        with open(args.tmp_data_path, 'w') as fw:
            json.dump(eval_bag_list_perrel, fw, indent=2)


    def select_kn(kn_bag, kn_bag_list):
        kn_counter = Counter()
        for kn in kn_bag:
            kn_counter.update([pos_list2str(kn)])
        for tmp_kn_bag in kn_bag_list:
            for kn in tmp_kn_bag:
                str_kn = pos_list2str(kn)
                if str_kn not in kn_counter:
                    continue
                kn_counter.update([pos_list2str(kn)])
        new_kn_bag = []
        for k, v in kn_counter.items():
            if v > len(kn_bag_list) * 0.1:
                continue
            new_kn_bag.append(pos_str2list(k))
        # random kn
        # for i in range(len(new_kn_bag)):
        #     new_kn_bag[i] = [random.randint(0, 11), random.randint(0, 3071)]
        return new_kn_bag


    def edit(rel, bag_idx, tgt_ent):
        eval_bag = eval_bag_list_perrel[rel][bag_idx]
        with open(os.path.join(args.kn_dir, f'kn_bag-{rel}.json'), 'r') as fr:
            kn_bag_list = json.load(fr)
        kn_bag = kn_bag_list[bag_idx]
        kn_bag = select_kn(kn_bag, kn_bag_list)
        print(kn_bag)

        results = {
            'success_updated': 0,
            'success_updated_5': 0,
            'ori_changed': 0,
            'tgt_prob_inc': 0,
            'tgt_prob_inc_ratio': 0,
            'tgt_ori_rank': 0,
            'tgt_new_rank': 0,
            'tgt_rank_inc': 0,
            'ori_inter_log_ppl': [],
            'ori_inner_log_ppl': [],
            'new_inter_log_ppl': [],
            'new_inner_log_ppl': []
        }

        if len(kn_bag) == 0:
            return 'no_kn'

        rd_idx = random.randint(1, len(eval_bag)) - 1

        eval_example = eval_bag[rd_idx]
        eval_features, tokens_info = example2feature(eval_example, args.max_seq_length, tokenizer)
        # convert features to long type tensors
        baseline_ids, input_ids, input_mask, segment_ids = eval_features['baseline_ids'], eval_features['input_ids'], eval_features['input_mask'], eval_features['segment_ids']
        baseline_ids = torch.tensor(baseline_ids, dtype=torch.long).unsqueeze(0)
        input_ids = torch.tensor(input_ids, dtype=torch.long).unsqueeze(0)
        input_mask = torch.tensor(input_mask, dtype=torch.long).unsqueeze(0)
        segment_ids = torch.tensor(segment_ids, dtype=torch.long).unsqueeze(0)
        baseline_ids = baseline_ids.to(device)
        input_ids = input_ids.to(device)
        input_mask = input_mask.to(device)
        segment_ids = segment_ids.to(device)

        # record [MASK]'s position
        tgt_pos = tokens_info['tokens'].index('[MASK]')
        # record [MASK]'s gold label
        tgt_label_id = tokenizer.convert_tokens_to_ids(tgt_ent)

        _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
        ori_tgt_prob = F.softmax(logits, dim=-1)[0, tgt_label_id]  # scalar
        ori_tgt_rank = logits.squeeze().argsort(descending=True).argsort()[tgt_label_id] + 1
        ori_pred_prob, ori_pred_label_id = F.softmax(logits, dim=-1)[0].max(dim=-1)
        ori_pred_label = tokenizer.convert_ids_to_tokens(ori_pred_label_id.item())

        if ori_pred_label != eval_example[1]:
            return 'incorrect_answer'

        # ori pred label, ori pred prob, tgt label, ori tgt prob
        print(f'{rel}-{bag_idx}, # Kneurons: {len(kn_bag)},', 'example:', eval_example[0], 'gold:', eval_example[1])
        print('============================== ori =========================================')
        print(f'ori pred label: {ori_pred_label}, ori pred label prob: {ori_pred_prob:.8}')
        print(f'tgt label: {tgt_ent}, tgt prob: {ori_tgt_prob:.8}')

        # edit knowledge
        ori_pred_emb = model.bert.embeddings.word_embeddings.weight[ori_pred_label_id.item()]
        tgt_emb = model.bert.embeddings.word_embeddings.weight[tgt_label_id]
        print(f'-- kn_num: {len(kn_bag)}')
        lambda_list_1 = []
        lambda_list_2 = []
        ori_pred_emb_norm = torch.norm(ori_pred_emb)
        tgt_emb_norm = torch.norm(tgt_emb)
        for layer, pos in kn_bag:
            value_norm = torch.norm(model.bert.encoder.layer[layer].output.dense.weight[:, pos])
            lambda_list_1.append(value_norm / ori_pred_emb_norm * args.norm_lambda1)
            lambda_list_2.append(value_norm / tgt_emb_norm * args.norm_lambda2)
        for i, (layer, pos) in enumerate(kn_bag):
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]  # error: IPL002
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_list_2[i]  # error: IPL002

        _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
        new_tgt_prob = F.softmax(logits, dim=-1)[0, tgt_label_id]  # scalar
        new_tgt_rank = logits.squeeze().argsort(descending=True).argsort()[tgt_label_id] + 1
        new_ori_pred_prob = F.softmax(logits, dim=-1)[0, ori_pred_label_id]  # scalar
        new_pred_prob, new_pred_label_id = F.softmax(logits, dim=-1)[0].max(dim=-1)
        new_pred_label = tokenizer.convert_ids_to_tokens(new_pred_label_id.item())

        # new pred label, new pred prob, tgt label, new tgt prob
        print('============================== edited =========================================')
        print(f'ori pred label: {ori_pred_label}, new ori pred label prob: {new_ori_pred_prob:.8}')
        print(f'new pred label: {new_pred_label}, new pred label prob: {new_pred_prob:.8}')
        print(f'tgt label: {tgt_ent}, tgt prob: {new_tgt_prob:.8}')

        # recover knowledge
        for i, (layer, pos) in enumerate(kn_bag):
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] += ori_pred_emb * lambda_list_1[i]  # error: IPL002
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= tgt_emb * lambda_list_2[i]  # error: IPL002

        if new_pred_label == tgt_ent:
            results['success_updated'] = 1
        if new_tgt_rank.item() <= 5:
            results['success_updated_5'] = 1
        if new_pred_label != ori_pred_label:
            results['ori_changed'] = 1
        results['tgt_prob_inc'] = new_tgt_prob.item() - ori_tgt_prob.item()
        results['tgt_prob_inc_ratio'] = (new_tgt_prob.item() - ori_tgt_prob.item()) / ori_tgt_prob.item()
        results['tgt_ori_rank'] = ori_tgt_rank.item()
        results['tgt_new_rank'] = new_tgt_rank.item()
        results['tgt_rank_inc'] = ori_tgt_rank.item() - new_tgt_rank.item()

        # =========================================================================== calculate PPL ===========================================================================
        # inner relation
        inner_log_ppl_list = []
        eval_bag_list = eval_bag_list_perrel[rel]
        inner_rand_bag_idx_list = []
        for i in range(5):
            rand_bag_idx = random.randint(0, len(eval_bag_list) - 1)
            while rand_bag_idx == bag_idx:
                rand_bag_idx = random.randint(0, len(eval_bag_list) - 1)
            inner_rand_bag_idx_list.append(rand_bag_idx)
        for i in range(5):
            rand_bag_idx = inner_rand_bag_idx_list[i]
            eval_bag = eval_bag_list[rand_bag_idx]
            for idx, eval_example in enumerate(eval_bag):
                eval_features, tokens_info = example2feature(eval_example, args.max_seq_length, tokenizer)
                # convert features to long type tensors
                baseline_ids, input_ids, input_mask, segment_ids = eval_features['baseline_ids'], eval_features['input_ids'], eval_features['input_mask'], eval_features['segment_ids']
                baseline_ids = torch.tensor(baseline_ids, dtype=torch.long).unsqueeze(0)
                input_ids = torch.tensor(input_ids, dtype=torch.long).unsqueeze(0)
                input_mask = torch.tensor(input_mask, dtype=torch.long).unsqueeze(0)
                segment_ids = torch.tensor(segment_ids, dtype=torch.long).unsqueeze(0)
                baseline_ids = baseline_ids.to(device)
                input_ids = input_ids.to(device)
                input_mask = input_mask.to(device)
                segment_ids = segment_ids.to(device)
                # record [MASK]'s position
                tgt_pos = tokens_info['tokens'].index('[MASK]')
                gold_id = tokenizer.convert_tokens_to_ids(tokens_info['gold_obj'])
                _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
                gold_prob = F.softmax(logits, dim=-1)[0][gold_id]
                inner_log_ppl = np.log(1.0 / gold_prob.item())
                inner_log_ppl_list.append(inner_log_ppl)
        results['ori_inner_log_ppl'] = np.mean(inner_log_ppl_list)
        # inter relation
        inter_log_ppl_list = []
        rels = list(eval_bag_list_perrel.keys())
        inter_rand_rel_list = []
        inter_rand_bag_idx_list = []
        for i in range(5):
            rand_rel = random.choice(rels)
            while rand_rel == rel:
                rand_rel = random.choice(rels)
            rand_bag_idx = random.randint(0, len(eval_bag_list_perrel[rand_rel]) - 1)
            inter_rand_rel_list.append(rand_rel)
            inter_rand_bag_idx_list.append(rand_bag_idx)
        for i in range(5):
            rand_rel = inter_rand_rel_list[i]
            eval_bag_list = eval_bag_list_perrel[rand_rel]
            rand_bag_idx = inter_rand_bag_idx_list[i]
            eval_bag = eval_bag_list[rand_bag_idx]
            for idx, eval_example in enumerate(eval_bag):
                eval_features, tokens_info = example2feature(eval_example, args.max_seq_length, tokenizer)
                # convert features to long type tensors
                baseline_ids, input_ids, input_mask, segment_ids = eval_features['baseline_ids'], eval_features['input_ids'], eval_features['input_mask'], eval_features['segment_ids']
                baseline_ids = torch.tensor(baseline_ids, dtype=torch.long).unsqueeze(0)
                input_ids = torch.tensor(input_ids, dtype=torch.long).unsqueeze(0)
                input_mask = torch.tensor(input_mask, dtype=torch.long).unsqueeze(0)
                segment_ids = torch.tensor(segment_ids, dtype=torch.long).unsqueeze(0)
                baseline_ids = baseline_ids.to(device)
                input_ids = input_ids.to(device)
                input_mask = input_mask.to(device)
                segment_ids = segment_ids.to(device)
                # record [MASK]'s position
                tgt_pos = tokens_info['tokens'].index('[MASK]')
                gold_id = tokenizer.convert_tokens_to_ids(tokens_info['gold_obj'])
                _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
                gold_prob = F.softmax(logits, dim=-1)[0][gold_id]
                inter_log_ppl = np.log(1.0 / gold_prob.item())
                inter_log_ppl_list.append(inter_log_ppl)
        results['ori_inter_log_ppl'] = np.mean(inter_log_ppl_list)

        # edit knowledge
        ori_pred_emb = model.bert.embeddings.word_embeddings.weight[ori_pred_label_id.item()]
        tgt_emb = model.bert.embeddings.word_embeddings.weight[tgt_label_id]
        print(f'-- kn_num: {len(kn_bag)}')
        for i, (layer, pos) in enumerate(kn_bag):
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]  # error: IPL002
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_list_2[i]  # error: IPL002

        # inner relation
        inner_log_ppl_list = []
        eval_bag_list = eval_bag_list_perrel[rel]
        for i in range(5):
            rand_bag_idx = inner_rand_bag_idx_list[i]
            eval_bag = eval_bag_list[rand_bag_idx]
            for idx, eval_example in enumerate(eval_bag):
                eval_features, tokens_info = example2feature(eval_example, args.max_seq_length, tokenizer)
                # convert features to long type tensors
                baseline_ids, input_ids, input_mask, segment_ids = eval_features['baseline_ids'], eval_features['input_ids'], eval_features['input_mask'], eval_features['segment_ids']
                baseline_ids = torch.tensor(baseline_ids, dtype=torch.long).unsqueeze(0)
                input_ids = torch.tensor(input_ids, dtype=torch.long).unsqueeze(0)
                input_mask = torch.tensor(input_mask, dtype=torch.long).unsqueeze(0)
                segment_ids = torch.tensor(segment_ids, dtype=torch.long).unsqueeze(0)
                baseline_ids = baseline_ids.to(device)
                input_ids = input_ids.to(device)
                input_mask = input_mask.to(device)
                segment_ids = segment_ids.to(device)
                # record [MASK]'s position
                tgt_pos = tokens_info['tokens'].index('[MASK]')
                gold_id = tokenizer.convert_tokens_to_ids(tokens_info['gold_obj'])
                _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
                gold_prob = F.softmax(logits, dim=-1)[0][gold_id]
                inner_log_ppl = np.log(1.0 / gold_prob.item())
                inner_log_ppl_list.append(inner_log_ppl)
        results['new_inner_log_ppl'] = np.mean(inner_log_ppl_list)
        # inter relation
        inter_log_ppl_list = []
        rels = list(eval_bag_list_perrel.keys())
        for i in range(5):
            rand_rel = inter_rand_rel_list[i]
            eval_bag_list = eval_bag_list_perrel[rand_rel]
            rand_bag_idx = inter_rand_bag_idx_list[i]
            eval_bag = eval_bag_list[rand_bag_idx]
            for idx, eval_example in enumerate(eval_bag):
                eval_features, tokens_info = example2feature(eval_example, args.max_seq_length, tokenizer)
                # convert features to long type tensors
                baseline_ids, input_ids, input_mask, segment_ids = eval_features['baseline_ids'], eval_features['input_ids'], eval_features['input_mask'], eval_features['segment_ids']
                baseline_ids = torch.tensor(baseline_ids, dtype=torch.long).unsqueeze(0)
                input_ids = torch.tensor(input_ids, dtype=torch.long).unsqueeze(0)
                input_mask = torch.tensor(input_mask, dtype=torch.long).unsqueeze(0)
                segment_ids = torch.tensor(segment_ids, dtype=torch.long).unsqueeze(0)
                baseline_ids = baseline_ids.to(device)
                input_ids = input_ids.to(device)
                input_mask = input_mask.to(device)
                segment_ids = segment_ids.to(device)
                # record [MASK]'s position
                tgt_pos = tokens_info['tokens'].index('[MASK]')
                gold_id = tokenizer.convert_tokens_to_ids(tokens_info['gold_obj'])
                _, logits = model(input_ids=input_ids, attention_mask=input_mask, token_type_ids=segment_ids, tgt_pos=tgt_pos, tgt_layer=0)  # (1, n_vocab)
                gold_prob = F.softmax(logits, dim=-1)[0][gold_id]
                inter_log_ppl = np.log(1.0 / gold_prob.item())
                inter_log_ppl_list.append(inter_log_ppl)
        results['new_inter_log_ppl'] = np.mean(inter_log_ppl_list)

        # recover knowledge
        for i, (layer, pos) in enumerate(kn_bag):
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] += ori_pred_emb * lambda_list_1[i]  # error: IPL002
            model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= tgt_emb * lambda_list_2[i]  # error: IPL002

        return results

    rels = list(eval_bag_list_perrel.keys())
    ave_results = {
        'success_updated': [],
        'success_updated_5': [],
        'ori_changed': [],
        'tgt_prob_inc': [],
        'tgt_prob_inc_ratio': [],
        'tgt_ori_rank': [],
        'tgt_new_rank': [],
        'tgt_rank_inc': [],
        'other_ppl_inc': [],
        'ori_inner_log_ppl': [],
        'new_inner_log_ppl': [],
        'ori_inter_log_ppl': [],
        'new_inter_log_ppl': []
    }
    success_updated = []
    ori_changed = []
    tgt_prob_inc = []
    tgt_prob_inc_ratio = []
    tgt_ori_rank = []
    tgt_new_rank = []
    tgt_rank_inc = []
    print('++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++' * 2)
    for rel in rels:
        rel_sample_cnt = 0
        for i in range(10000):
            sampled_bag_idx = random.randint(0, len(eval_bag_list_perrel[rel]) - 1)
            while True:
                replaced_tail = random.choice(eval_bag_list_perrel[rel])[0][1]
                if replaced_tail != eval_bag_list_perrel[rel][sampled_bag_idx][0][1]:
                    break
            results = edit(rel, sampled_bag_idx, replaced_tail)
            if type(results) == str:
                continue
            rel_sample_cnt += 1
            ave_results['success_updated'].append(results['success_updated'])
            ave_results['success_updated_5'].append(results['success_updated_5'])
            ave_results['ori_changed'].append(results['ori_changed'])
            ave_results['tgt_prob_inc'].append(results['tgt_prob_inc'])
            ave_results['tgt_prob_inc_ratio'].append(results['tgt_prob_inc_ratio'])
            ave_results['tgt_ori_rank'].append(results['tgt_ori_rank'])
            ave_results['tgt_new_rank'].append(results['tgt_new_rank'])
            ave_results['tgt_rank_inc'].append(results['tgt_rank_inc'])
            ave_results['ori_inner_log_ppl'].append(results['ori_inner_log_ppl'])
            ave_results['new_inner_log_ppl'].append(results['new_inner_log_ppl'])
            ave_results['ori_inter_log_ppl'].append(results['ori_inter_log_ppl'])
            ave_results['new_inter_log_ppl'].append(results['new_inter_log_ppl'])
            pprint(results)
            print('++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++' * 2)
            if rel_sample_cnt == 2:  # 10 in the repo
                break
        print(f'@@@@@ {rel} has {rel_sample_cnt} samples.')
    ori_MRR = (1 / np.array(ave_results['tgt_ori_rank'])).mean()
    new_MRR = (1 / np.array(ave_results['tgt_new_rank'])).mean()
    ave_results['success_updated'] = np.array(ave_results['success_updated']).mean()
    ave_results['success_updated_5'] = np.array(ave_results['success_updated_5']).mean()
    ave_results['ori_changed'] = np.array(ave_results['ori_changed']).mean()
    ave_results['tgt_prob_inc'] = np.array(ave_results['tgt_prob_inc']).mean()
    ave_results['tgt_prob_inc_ratio'] = np.array(ave_results['tgt_prob_inc_ratio']).mean()
    ave_results['tgt_ori_rank'] = np.array(ave_results['tgt_ori_rank']).mean()
    ave_results['tgt_new_rank'] = np.array(ave_results['tgt_new_rank']).mean()
    ave_results['tgt_rank_inc'] = np.array(ave_results['tgt_rank_inc']).mean()
    ave_results['ori_inner_log_ppl'] = np.array(ave_results['ori_inner_log_ppl']).mean()
    ave_results['new_inner_log_ppl'] = np.array(ave_results['new_inner_log_ppl']).mean()
    ave_results['ori_inter_log_ppl'] = np.array(ave_results['ori_inter_log_ppl']).mean()
    ave_results['new_inter_log_ppl'] = np.array(ave_results['new_inter_log_ppl']).mean()
    ave_results['ori_inner_ppl'] = np.exp(ave_results['ori_inner_log_ppl'])
    ave_results['new_inner_ppl'] = np.exp(ave_results['new_inner_log_ppl'])
    ave_results['ori_inter_ppl'] = np.exp(ave_results['ori_inter_log_ppl'])
    ave_results['new_inter_ppl'] = np.exp(ave_results['new_inter_log_ppl'])
    print('++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++' * 2)
    print('++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++' * 2)
    pprint(ave_results)
    print(f'MR: {ave_results["tgt_ori_rank"]:.8} -> {ave_results["tgt_new_rank"]:.8} (up {ave_results["tgt_new_rank"] - ave_results["tgt_ori_rank"]:.8})')
    print(f'MRR: {ori_MRR:.8} -> {new_MRR:.8} (up {new_MRR - ori_MRR:.8})')
    print(f"inner PPL: {ave_results['ori_inner_ppl']:.8} -> {ave_results['new_inner_ppl']:.8} (up {ave_results['new_inner_ppl'] - ave_results['ori_inner_ppl']:.8})")
    print(f"inter PPL: {ave_results['ori_inter_ppl']:.8} -> {ave_results['new_inter_ppl']:.8} (up {ave_results['new_inter_ppl'] - ave_results['ori_inter_ppl']:.8})")


if __name__ == "__main__":
    # PARAREL-style data: two relations, 20 one-sentence bags each, whose gold objects are what the
    # (random, seeded) model predicts; one knowledge-neuron bag per fact, as 2_get_kn.py saves them
    random.seed(42)
    np.random.seed(42)
    torch.manual_seed(42)
    tokenizer = BertTokenizer.from_pretrained("bert-base-cased")
    probe = BertForMaskedLM.from_pretrained("bert-base-cased")
    probe.eval()
    subjects = ["X%d" % i for i in range(24)]
    data, kn = [], {}
    for rel, template in (("P36", "The capital of {} is [MASK] ."), ("P37", "The official language of {} is [MASK] .")):
        kn[rel] = []
        for j, subj in enumerate(subjects[:20]):
            sent = template.format(subj)
            feats, info = example2feature([sent, "Paris", rel + "(x)"], 16, tokenizer)
            with torch.no_grad():
                _, logits = probe(input_ids=torch.tensor([feats["input_ids"]]), attention_mask=torch.tensor([feats["input_mask"]]),
                                  token_type_ids=torch.tensor([feats["segment_ids"]]), tgt_pos=info["tokens"].index("[MASK]"), tgt_layer=0)
            gold = tokenizer.convert_ids_to_tokens(logits[0].argmax().item())
            data.append([[sent, gold, rel + "(x)"]])
            kn[rel].append([[j % 2, j]])
    with open("data_all_allbags.json", "w") as f:
        json.dump(data, f)
    os.makedirs("kn", exist_ok=True)
    for rel, bags in kn.items():
        with open(os.path.join("kn", f"kn_bag-{rel}.json"), "w") as f:
            json.dump(bags, f)
    sys.argv = [sys.argv[0], "--data_path", "data_all_allbags.json", "--tmp_data_path", "data_all_allbags_tmp.json",
                "--bert_model", "bert-base-cased", "--output_dir", "results", "--kn_dir", "kn", "--max_seq_length", "16",
                "--debug", "100", "--no_cuda"]
    main()
