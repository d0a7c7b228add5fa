"""NNR (news recommendation) SUE user encoder: each GCNLayer ends `out = F.relu(out)` and, with the residual connection on, `out += feature` on that ReLU output; four layers with nn.Dropout(inplace=True) between them run over the clicked-news graph."""
# outcome: inplace-error
# source: https://github.com/Veason-silverbullet/NNR/issues/3
# repo: Veason-silverbullet/NNR
# category: residual
# twin: b039_nnr_gcn_layer_relu_residual_iadd_fixed.py
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- layers.py ----
class GCNLayer(nn.Module):
    def __init__(self, in_dim, out_dim, residual=False, layer_norm=False):
        super(GCNLayer, self).__init__()
        self.residual = residual
        self.layer_norm = layer_norm
        if self.residual and in_dim != out_dim:
            raise Exception('To facilitate residual connection, in_dim must equal to out_dim')
        self.W = nn.Linear(in_features=in_dim, out_features=out_dim, bias=True)
        if self.layer_norm:
            self.layer_normalization = nn.LayerNorm(normalized_shape=[out_dim])

    def initialize(self):
        nn.init.xavier_uniform_(self.W.weight, gain=nn.init.calculate_gain('relu'))
        nn.init.zeros_(self.W.bias)

    # Input
    # feature : [batch_size, node_num, feature_dim]
    # graph   : [batch_size, node_num, node_num]
    # Output
    # out     : [batch_size, node_num, feature_dim]
    def forward(self, feature, graph):
        out = self.W(torch.bmm(graph, feature)) # [batch_size, node_num, feature_num]
        if self.layer_norm:
            out = self.layer_normalization(out) # [batch_size, node_num, feature_num]
        out = F.relu(out)                       # [batch_size, node_num, feature_num]  # saved-by
        if self.residual:
            out += feature                      # [batch_size, node_num, feature_num]  # error: IPL001
        return out

class GCN(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_dim=0, num_layers=1, dropout=0.1, residual=False, layer_norm=False):
        super(GCN, self).__init__()
        self.num_layers = num_layers
        self.gcn_layers = []
        if self.num_layers == 1:
            self.gcn_layers.append(GCNLayer(in_dim, out_dim, residual=residual, layer_norm=layer_norm))
        else:
            self.dropout = nn.Dropout(dropout, inplace=True)
            self.gcn_layers.append(GCNLayer(in_dim, hidden_dim, residual=residual, layer_norm=layer_norm))
            for i in range(1, self.num_layers - 1):
                self.gcn_layers.append(GCNLayer(hidden_dim, hidden_dim, residual=residual, layer_norm=layer_norm))
            self.gcn_layers.append(GCNLayer(hidden_dim, out_dim, residual=residual, layer_norm=layer_norm))
        self.gcn_layers = nn.ModuleList(self.gcn_layers)

    def initialize(self):
        for gcn_layer in self.gcn_layers:
            gcn_layer.initialize()

    # Input
    # feature : [batch_size, node_num, feature_dim]
    # graph   : [batch_size, node_num, node_num]
    # Output
    # out     : [batch_size, node_num, feature_dim]
    def forward(self, feature, graph):
        out = feature
        for i in range(self.num_layers - 1):
            out = self.dropout(self.gcn_layers[i](out, graph))
        out = self.gcn_layers[self.num_layers - 1](out, graph)
        return out


# ---- userEncoders.py SUE, step 1 (GCN over the clicked news and the category proxy nodes), on random
# news embeddings with a config as config.py sets it (dropout_rate 0.2, gcn_layer_num 4, residual on);
# a dot-product click predictor, as the model scores candidates, a few training steps ----
class Config:
    dropout_rate = 0.2
    gcn_layer_num = 4
    no_gcn_residual = False
    gcn_layer_norm = False
    category_num = 3
    max_history_num = 6


class SUE_GCN(nn.Module):
    def __init__(self, news_embedding_dim, config):
        super(SUE_GCN, self).__init__()
        self.news_embedding_dim = news_embedding_dim
        self.max_history_num = config.max_history_num
        self.proxy_node_embedding = nn.Parameter(torch.zeros([config.category_num, self.news_embedding_dim]))
        self.gcn = GCN(in_dim=self.news_embedding_dim, out_dim=self.news_embedding_dim, hidden_dim=self.news_embedding_dim, num_layers=config.gcn_layer_num, dropout=config.dropout_rate / 2, residual=not config.no_gcn_residual, layer_norm=config.gcn_layer_norm)
        self.dropout_ = nn.Dropout(p=config.dropout_rate, inplace=False)

    def initialize(self):
        self.gcn.initialize()
        nn.init.zeros_(self.proxy_node_embedding)

    def forward(self, history_embedding, user_history_graph, candidate_news_representaion):
        batch_size = history_embedding.size(0)
        history_embedding = torch.cat([history_embedding, self.dropout_(self.proxy_node_embedding.unsqueeze(dim=0).expand(batch_size, -1, -1))], dim=1) # [batch_size, max_history_num + category_num, news_embedding_dim]
        gcn_feature = self.gcn(history_embedding, user_history_graph) + history_embedding                                                               # [batch_size, max_history_num + category_num, news_embedding_dim]
        gcn_feature = gcn_feature[:, :self.max_history_num, :]                                                                                          # [batch_size, max_history_num, news_embedding_dim]
        user_representation = gcn_feature.mean(dim=1, keepdim=True)
        return (user_representation * candidate_news_representaion).sum(dim=2)                                                                         # [batch_size, news_num]


if __name__ == '__main__':
    config = Config()
    news_embedding_dim = 16
    news_encoder = nn.Linear(20, news_embedding_dim)
    user_encoder = SUE_GCN(news_embedding_dim, config)
    user_encoder.initialize()
    optimizer = torch.optim.Adam(list(news_encoder.parameters()) + list(user_encoder.parameters()), lr=1e-3)
    node_num = config.max_history_num + config.category_num
    for step in range(2):
        history = news_encoder(torch.randn(4, config.max_history_num, 20))
        candidates = news_encoder(torch.randn(4, 5, 20))
        graph = torch.rand(4, node_num, node_num)
        graph = graph / graph.sum(dim=2, keepdim=True)
        logits = user_encoder(history, graph, candidates)
        loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
