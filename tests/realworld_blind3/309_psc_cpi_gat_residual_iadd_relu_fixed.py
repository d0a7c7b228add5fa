"""PSC-CPI's protein structure encoder (net_prot_gat): each of its 7 attention layers ends with the residual added out of place (`x = x + x0`), the standard fix; fine-tuned for affinity on random protein/compound batches."""
# outcome: ok
# source: https://github.com/LirongWu/PSC-CPI/issues/1
# repo: LirongWu/PSC-CPI
# category: residual
# twin: 308_psc_cpi_gat_residual_iadd_relu.py
# code/model.py (ProteinEmbed_Model with the GAT encoder it trains with; the GCN and SAGE
# encoders, not used here, left out) and code/train.py's fine-tuning loop, with a random
# stand-in for the data loader (proteins of 1000 residues, as the model hard-codes).
import argparse
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class ProteinEmbed_Model(nn.Module):
    def __init__(self, param):
        super().__init__()
        self.aminoAcid_embedding = nn.Embedding(29, param['hidden_dim'])
        if param['seq_encoder'] == 'HRNN':
            self.gru0 = nn.GRU(param['hidden_dim'], param['hidden_dim'], batch_first=True)
            self.gru1 = nn.GRU(param['hidden_dim'], param['hidden_dim'], batch_first=True)
        elif param['seq_encoder'] == 'LSTM':
            self.lstm0 = nn.LSTM(param['hidden_dim'], param['hidden_dim'], batch_first=True)
            self.lstm1 = nn.LSTM(param['hidden_dim'], param['hidden_dim'], batch_first=True)
        elif param['seq_encoder'] == 'Bi_LSTM':
            self.bi_lstm0 = nn.LSTM(param['hidden_dim'], int(param['hidden_dim']/2), batch_first=True, bidirectional=True)
            self.bi_lstm1 = nn.LSTM(param['hidden_dim'], int(param['hidden_dim']/2), batch_first=True, bidirectional=True)
        elif param['seq_encoder'] == 'Transformer':
            encoder_layer = nn.TransformerEncoderLayer(param['hidden_dim'], 8, param['hidden_dim'], 0.5)
            self.transformer = nn.TransformerEncoder(encoder_layer, 6)

        if param['str_encoder'] == 'GAT':
            self.gat = net_prot_gat(param)

        
        self.crossInteraction = crossInteraction(param)
        self.gcn_comp = net_comp_gcn(param)

        self.joint_attn_prot, self.joint_attn_comp = nn.Linear(param['hidden_dim'], param['hidden_dim']), nn.Linear(param['hidden_dim'], param['hidden_dim'])
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.relu = nn.ReLU()

        self.regressor0 = nn.Sequential(nn.Conv1d(1, 64, kernel_size=4, stride=2, padding=1),
                                       nn.LeakyReLU(0.1),
                                       nn.MaxPool1d(kernel_size=4, stride=4))
        self.regressor1 = nn.Sequential(nn.Linear(int(64*param['hidden_dim']/8), 600),
                                        nn.LeakyReLU(0.1),
                                        nn.Dropout(0.5),
                                        nn.Linear(600, 300),
                                        nn.LeakyReLU(0.1),
                                        nn.Dropout(0.5),
                                        nn.Linear(300, 1))

        self.projection_head_seq = nn.Sequential(nn.Linear(param['hidden_dim'], 256), nn.ReLU(), nn.Linear(256, 256))
        self.projection_head_graph = nn.Sequential(nn.Linear(param['hidden_dim'], 256), nn.ReLU(), nn.Linear(256, 256))

        self.task_mode = param['task_mode']
        self.seq_encoder = param['seq_encoder']
        
        self.hidden_dim = param['hidden_dim']
        self.temp = param['temp']
        self.aug_left = param['aug_left']
        self.aug_right = param['aug_right']
        self.intra_loss = param['intra_loss']

    def forward(self, prot_data, drug_data_ver, drug_data_adj, prot_contacts, prot_inter, prot_inter_exist, label, fused_matrix, pre_train_mode='fine-tune'):
        # protein embedding
        aminoAcid_embedding = self.aminoAcid_embedding(prot_data)

        b, i, j, d = aminoAcid_embedding.size()
        prot_seq_embedding = aminoAcid_embedding.reshape(b*i, j, d)
        if self.seq_encoder == 'HRNN':
            prot_seq_embedding, _ = self.gru0(prot_seq_embedding)
            prot_seq_embedding = prot_seq_embedding.reshape(b*j, i, d)
            prot_seq_embedding, _ = self.gru1(prot_seq_embedding)
        elif self.seq_encoder == 'LSTM':
            prot_seq_embedding, _ = self.lstm0(prot_seq_embedding)
            prot_seq_embedding = prot_seq_embedding.reshape(b*j, i, d)
            prot_seq_embedding, _ = self.lstm1(prot_seq_embedding)
        elif self.seq_encoder == 'Bi_LSTM':
            prot_seq_embedding, _ = self.bi_lstm0(prot_seq_embedding)
            prot_seq_embedding = prot_seq_embedding.reshape(b*j, i, d)
            prot_seq_embedding, _ = self.bi_lstm1(prot_seq_embedding)
        elif self.seq_encoder == 'Transformer':
            prot_seq_embedding = self.transformer(prot_seq_embedding.transpose(0, 1)).transpose(0, 1)
        prot_seq_embedding = prot_seq_embedding.reshape(b, i*j, d)

        prot_graph_embedding = aminoAcid_embedding.reshape(b, i*j, d)
        prot_graph_embedding = self.gat(prot_graph_embedding, prot_contacts)

        prot_embedding = self.crossInteraction(prot_seq_embedding, prot_graph_embedding)

        # compound embedding
        comp_embedding = self.gcn_comp(drug_data_ver, drug_data_adj)

        # compound-protein interaction
        inter_comp_prot = self.sigmoid(torch.einsum('bij,bkj->bik', self.joint_attn_prot(self.relu(prot_embedding)), self.joint_attn_comp(self.relu(comp_embedding))))
        inter_comp_prot_sum = torch.einsum('bij->b', inter_comp_prot)
        inter_comp_prot = torch.einsum('bij,b->bij', inter_comp_prot, 1/inter_comp_prot_sum)

        # compound-protein joint embedding
        cp_embedding = self.tanh(torch.einsum('bij,bkj->bikj', prot_embedding, comp_embedding))
        cp_embedding = torch.einsum('bijk,bij->bk', cp_embedding, inter_comp_prot)

        # compound-protein affinity
        affn_comp_prot = cp_embedding[:, None, :]
        affn_comp_prot = self.regressor0(affn_comp_prot)
        affn_comp_prot = affn_comp_prot.view(b, int(64*self.hidden_dim/8))
        affn_comp_prot = self.regressor1(affn_comp_prot)

        if self.task_mode == 0:
            loss = self.loss_affn(affn_comp_prot, label) 
        elif self.task_mode == 1:
            loss = self.loss_reg(inter_comp_prot, fused_matrix.to(inter_comp_prot.device), prot_contacts) + self.loss_inter(inter_comp_prot, prot_inter, prot_inter_exist)

        return loss

    def loss_reg(self, inter, fused_matrix, prot_contacts):
        reg_l1 = torch.abs(inter).sum(dim=(1,2)).mean()

        reg_fused = torch.abs(torch.einsum('bij,ti->bjt', inter, fused_matrix)).sum(dim=(1,2)).mean()

        group = torch.einsum('bij,bki->bjk', inter**2, prot_contacts).sum(dim=1)
        group[group==0] = group[group==0] + 1e10
        reg_group = ( torch.sqrt(group) * torch.sqrt(prot_contacts.sum(dim=2)) ).sum(dim=1).mean()

        reg_loss = (reg_l1 + reg_fused + reg_group) * 0.001

        return reg_loss

    def loss_inter(self, inter, prot_inter, prot_inter_exist):
        label = torch.einsum('b,bij->bij', prot_inter_exist, prot_inter)
        loss = torch.sqrt(((inter - label) ** 2).sum(dim=(1,2))).mean()
        return loss * 1000

    def loss_affn(self, affn, label):
        loss = ((affn - label) ** 2).mean()
        return loss


class net_prot_gat(nn.Module):
    def __init__(self, param):
        super().__init__()
        self.linear0 = nn.ModuleList([nn.Linear(param['hidden_dim'], param['hidden_dim']) for _ in range(7)])
        self.linear1 = nn.ModuleList([nn.Linear(param['hidden_dim'], param['hidden_dim']) for _ in range(7)])
        self.w_attn = nn.ModuleList([nn.Linear(param['hidden_dim'], param['hidden_dim']) for _ in range(7)])
        self.linear_final = nn.Linear(param['hidden_dim'], param['hidden_dim'])

        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def forward(self, x, adj):
        adj[:, list(range(1000)), list(range(1000))] = 1
        
        for l in range(7):
            x0 = x

            adj_attn = self.sigmoid(torch.einsum('bij,bkj->bik', self.w_attn[l](x), x))
            adj_attn = adj_attn + 1e-5 * torch.eye(1000).to(x.device)
            adj_attn = torch.einsum('bij,bij->bij', adj_attn, adj)
            adj_attn_sum = torch.einsum('bij->bi', adj_attn)
            adj_attn = torch.einsum('bij,bi->bij', adj_attn, 1/adj_attn_sum)

            x = torch.einsum('bij,bjd->bid', adj_attn, x)
            x = self.relu(self.linear0[l](x))
            x = self.relu(self.linear1[l](x))

            x = x + x0

        x = self.linear_final(x)
        return x


class crossInteraction(nn.Module):
    def __init__(self, param):
        super().__init__()
        self.linear = nn.Linear(param['hidden_dim'] * 2, param['hidden_dim'])
        self.modality = param['modality']

        if self.modality == 'seq_str_cross':
            self.crossInteraction0 = nn.Sequential(nn.Linear(param['hidden_dim'], param['hidden_dim']), nn.ReLU(), nn.Linear(param['hidden_dim'], param['hidden_dim']))
            self.crossInteraction1 = nn.Sequential(nn.Linear(param['hidden_dim'], param['hidden_dim']), nn.ReLU(), nn.Linear(param['hidden_dim'], param['hidden_dim']))
            self.tanh = nn.Tanh()

    def forward(self, x_seq, x_graph):
        if self.modality == 'seq_str_linear':
            x = torch.cat((x_seq, x_graph), dim=2)
            x = self.linear(x)
        elif self.modality == 'sequence':
            x = x_seq
        elif self.modality == 'structure':
            x = x_graph
        elif self.modality == 'seq_str_cross':
            CI0 = self.tanh(torch.einsum('bij,bij->bi', self.crossInteraction0(x_graph), x_seq)) + 1
            CI1 = self.tanh(torch.einsum('bij,bij->bi', self.crossInteraction1(x_seq), x_graph)) + 1
            x_seq = torch.einsum('bij,bi->bij', x_seq, CI0)
            x_graph = torch.einsum('bij,bi->bij', x_graph, CI1)

            x = torch.cat((x_seq, x_graph), dim=2)
            x = self.linear(x)
        
        return x


class net_comp_gcn(nn.Module):
    def __init__(self, param):
        super().__init__()
        self.linear = nn.ModuleList([nn.Linear(43, param['hidden_dim']), nn.Linear(param['hidden_dim'], param['hidden_dim']), nn.Linear(param['hidden_dim'], param['hidden_dim'])])
        self.linear_final = nn.Linear(param['hidden_dim'], param['hidden_dim'])
        self.relu = nn.ReLU()
        
    def forward(self, x, adj):
        for l in range(3):
            x = self.linear[l](x)
            x = torch.einsum('bij,bjd->bid', adj, x)
            x = self.relu(x)
        x = self.linear_final(x)

        return x


# stand-in for dataset.py's data_loader (the preprocessed .npy files are not here): proteins
# of 10 x 100 residues with their contact maps, compounds of 8 atoms with 43 features
class data_loader(torch.utils.data.Dataset):
    def __init__(self, name_split='train'):
        g = torch.Generator().manual_seed(0)
        n = 4
        self.prot_data = torch.randint(0, 29, (n, 10, 100), generator=g)
        self.drug_data_ver = torch.rand(n, 8, 43, generator=g)
        self.drug_data_adj = (torch.rand(n, 8, 8, generator=g) > 0.7).float()
        self.prot_contacts = (torch.rand(n, 1000, 1000, generator=g) > 0.99).float()
        self.prot_inter = torch.rand(n, 1000, 8, generator=g)
        self.prot_inter_exist = torch.ones(n)
        self.label = torch.rand(n, 1, generator=g) * 10

    def __len__(self):
        return len(self.prot_data)

    def __getitem__(self, index):
        return (self.prot_data[index], self.drug_data_ver[index], self.drug_data_adj[index],
                self.prot_contacts[index], self.prot_inter[index], self.prot_inter_exist[index],
                self.label[index])


def set_seed(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)


# ---- code/train.py (hidden size, batch and epochs shrunk; no pre-training, no nni) ----
parser = argparse.ArgumentParser()
parser.add_argument('--hidden_dim', type=int, default=16)
parser.add_argument('--batch_size', type=int, default=2)
parser.add_argument('--epoch', type=int, default=1)
parser.add_argument('--learning_rate', type=float, default=5e-5)
parser.add_argument('--temp', type=float, default=0.5)
parser.add_argument('--intra_loss', type=float, default=1.0)

parser.add_argument('--task_mode', type=int, default=0)
parser.add_argument('--modality', type=str, default='seq_str_linear')
parser.add_argument('--pretrain', type=int, default=0)
parser.add_argument('--seq_encoder', type=str, default='HRNN')
parser.add_argument('--str_encoder', type=str, default='GAT')
parser.add_argument('--seed', type=int, default=0)
parser.add_argument('--train', type=int, default=1)

parser.add_argument('--aug_left', type=float, default=0.001)
parser.add_argument('--aug_right', type=float, default=0.999)

args = parser.parse_args()
param = args.__dict__


set_seed(param['seed'])

train_set = data_loader(name_split='train')
train_loader = torch.utils.data.DataLoader(dataset=train_set, batch_size=param['batch_size'], shuffle=True)

model = ProteinEmbed_Model(param).to(device)
optimizer = torch.optim.Adam(model.parameters(), float(param['learning_rate']))

fused_matrix = torch.eye(1000).to(device)

if param['train'] == 1:
    for epoch in range(param['epoch']):
        model.train()
        loss_epoch, batch = 0, 0
        for prot_data, drug_data_ver, drug_data_adj, prot_contacts, prot_inter, prot_inter_exist, label in train_loader:
            prot_data, drug_data_ver, drug_data_adj, prot_contacts, prot_inter, prot_inter_exist, label = prot_data.to(device, non_blocking=True), drug_data_ver.to(device, non_blocking=True), drug_data_adj.to(device, non_blocking=True), prot_contacts.to(device, non_blocking=True), prot_inter.to(device, non_blocking=True), prot_inter_exist.to(device, non_blocking=True), label.to(device, non_blocking=True)

            optimizer.zero_grad()
            loss = model(prot_data, drug_data_ver, drug_data_adj, prot_contacts, prot_inter, prot_inter_exist, label, fused_matrix)
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), 5)
            optimizer.step()

            loss_epoch += loss.detach().cpu().numpy()
            batch += 1

        print('Epoch: {}, Train loss: {}'.format(epoch, loss_epoch / batch))
