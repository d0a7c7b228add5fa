"""SPQ's pqDist_one as the repository fixed it for PyTorch 1.9+ (commit 41fc85f's line): each distance is written into the split view of `D_C` with `.detach()`, so retrieval evaluation writes plain values and runs."""
# outcome: ok
# source: https://github.com/youngkyunJang/SPQ/issues/2
# repo: youngkyunJang/SPQ
# category: residual
# twin: 480_spq_pqdist_split_view_write.py
# A small conv trunk with 512 output features stands in for ResNet_Baseline, random images for
# CIFAR-10, flips and noise for the kornia augmentation; pqDist_one with the line commit 41fc85f gives.
import argparse

import numpy as np
import torch as T
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


# ---- utils.py ----
def Soft_Quantization(X, C, N_books, tau_q):
    L_word = int(C.size()[1]/N_books)
    x = T.split(X, L_word, dim=1)
    c = T.split(C, L_word, dim=1)
    for i in range(N_books):
        soft_c = F.softmax(squared_distances(x[i], c[i]) * (-tau_q), dim=-1)
        if i==0:
            Z = soft_c @ c[i]
        else:
            Z = T.cat((Z, soft_c @ c[i]), dim=1)
    return Z

def squared_distances(x, y):
    '''
    Input: x is a Nxd matrix
           y is an optional Mxd matirx
    Output: dist is a NxM matrix where dist[i,j] is the square norm between x[i,:] and y[j,:]
            if y is not given then use 'y=x'.
    i.e. dist[i,j] = ||x[i,:]-y[j,:]||^2
    '''
    diff = x.unsqueeze(1) - y.unsqueeze(0)
    return T.sum(diff * diff, -1)


class ResNet_Baseline(nn.Module):
    def __init__(self):
        super(ResNet_Baseline, self).__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                                      nn.Conv2d(32, 512, 3, 2, 1, bias=False), nn.BatchNorm2d(512), nn.ReLU(inplace=True),
                                      nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return T.flatten(self.features(x), 1)


def Augmentation(x):
    flip = T.rand(x.size(0)) < 0.5
    x = T.where(flip[:, None, None, None], x.flip(-1), x)
    return x + 0.05 * T.randn_like(x)


# ---- Retrieval.py ----
def pqDist_one(C, N_books, g_x, q_x):
    l1, l2 = C.shape
    L_word = int(l2/N_books)
    D_C = T.zeros((l1, N_books), dtype=T.float32)

    q_x_split = T.split(q_x, L_word, 0)
    g_x_split = np.split(g_x.cpu().data.numpy(), N_books, 1)
    C_split = T.split(C, L_word, 1)
    D_C_split = T.split(D_C, 1, 1)

    for j in range(N_books):
        for k in range(l1):
            D_C_split[j][k] = T.norm(q_x_split[j]-C_split[j][k], 2).detach() #for PyTorch version over 1.9
        if j == 0:
            dist = D_C_split[j][g_x_split[j]]
        else:
            dist = T.add(dist, D_C_split[j][g_x_split[j]])
    Dpq = T.squeeze(dist)
    return Dpq

def Indexing(C, N_books, X):
    l1, l2 = C.shape
    L_word = int(l2/N_books)
    x = T.split(X, L_word, 1)
    y = T.split(C, L_word, 1)
    for i in range(N_books):
        diff = squared_distances(x[i], y[i])
        arg = T.argmin(diff, dim=1)
        min_idx = T.reshape(arg, [-1, 1])
        if i == 0:
            quant_idx = min_idx
        else:
            quant_idx = T.cat((quant_idx, min_idx), dim=1)
    return quant_idx

def Evaluate_mAP(C, N_books, gallery_codes, query_codes, gallery_labels, query_labels, device, TOP_K=None):
    num_query = query_labels.shape[0]
    mean_AP = 0.0

    if True:
        for i in range(num_query):
            # Retrieve images from database
            retrieval = (query_labels[i, :] @ gallery_labels.t() > 0).float()

            # Arrange position according to hamming distance
            retrieval = retrieval[T.argsort(pqDist_one(C, N_books, gallery_codes, query_codes[i]))][:TOP_K]

            # Retrieval count
            retrieval_cnt = retrieval.sum().int().item()

            # Can not retrieve images
            if retrieval_cnt == 0:
                continue

            # Generate score for every position
            score = T.linspace(1, retrieval_cnt, retrieval_cnt).to(device)

            # Acquire index
            index = (T.nonzero(retrieval == 1, as_tuple=False).squeeze() + 1.0).float().to(device)

            mean_AP += (score / index).mean()

        mean_AP = mean_AP / num_query
    return mean_AP


def DoRetrieval(device, args, net, C):
    print("Do Retrieval!")
    Gallery_loader = [(T.rand(8, 3, 16, 16), T.randint(0, args.num_cls, (8,))) for _ in range(2)]
    Query_loader = [(T.rand(4, 3, 16, 16), T.randint(0, args.num_cls, (4,)))]

    net.eval()
    with T.no_grad():
        for i, data in enumerate(Gallery_loader, 0):
            gallery_x_batch, gallery_y_batch = data[0].to(device), data[1].to(device)
            outputs = net(gallery_x_batch)
            gallery_c_batch = Indexing(C, args.N_books, outputs[0])
            gallery_y_batch = T.eye(args.num_cls)[gallery_y_batch]
            if i == 0:
                gallery_c = gallery_c_batch
                gallery_y = gallery_y_batch
            else:
                gallery_c = T.cat([gallery_c, gallery_c_batch], 0)
                gallery_y = T.cat([gallery_y, gallery_y_batch], 0)

        for i, data in enumerate(Query_loader, 0):
            query_x_batch, query_y_batch = data[0].to(device), data[1].to(device)
            outputs = net(query_x_batch)
            query_y_batch = T.eye(args.num_cls)[query_y_batch]
            if i == 0:
                query_c = outputs[0]
                query_y = query_y_batch
            else:
                query_c = T.cat([query_c, outputs[0]], 0)
                query_y = T.cat([query_y, query_y_batch], 0)

    mAP = Evaluate_mAP(C, args.N_books, gallery_c.type(T.int), query_c, gallery_y, query_y, device, args.Top_N)
    return mAP


# ---- main_SPQ.py ----
class CQCLoss(T.nn.Module):

    def __init__(self, device, batch_size, tau_cqc):
        super(CQCLoss, self).__init__()
        self.batch_size = batch_size
        self.tau_cqc = tau_cqc
        self.device = device
        self.get_corr_mask = self._get_correlated_mask().type(T.bool)

    def _get_correlated_mask(self):
        diag = np.eye(2 * self.batch_size)
        l1 = np.eye((2 * self.batch_size), 2 * self.batch_size, k=-self.batch_size)
        l2 = np.eye((2 * self.batch_size), 2 * self.batch_size, k=self.batch_size)
        mask = T.from_numpy((diag + l1 + l2))
        mask = (1 - mask).type(T.bool)
        return mask.to(self.device)

    def forward(self, Xa, Xb, Za, Zb):

        XaZb = T.cat([Xa, Zb], dim=0)
        XbZa = T.cat([Xb, Za], dim=0)

        Cossim_ab = F.cosine_similarity(XaZb.unsqueeze(1), XaZb.unsqueeze(0), dim=-1)
        Rab = T.diag(Cossim_ab, self.batch_size)
        Lab = T.diag(Cossim_ab, -self.batch_size)
        Pos_ab = T.cat([Rab, Lab]).view(2 * self.batch_size, 1)
        Neg_ab = Cossim_ab[self.get_corr_mask].view(2 * self.batch_size, -1)

        Cossim_ba = F.cosine_similarity(XbZa.unsqueeze(1), XbZa.unsqueeze(0), dim=-1)
        Rba = T.diag(Cossim_ba, self.batch_size)
        Lba = T.diag(Cossim_ba, -self.batch_size)    
        Pos_ba = T.cat([Rba, Lba]).view(2 * self.batch_size, 1)
        Neg_ba = Cossim_ba[self.get_corr_mask].view(2 * self.batch_size, -1)


        logits_ab = T.cat((Pos_ab, Neg_ab), dim=1)
        logits_ab /= self.tau_cqc

        logits_ba = T.cat((Pos_ba, Neg_ba), dim=1)
        logits_ba /= self.tau_cqc

        labels = T.zeros(2 * self.batch_size).to(self.device).long()
        
        loss = F.cross_entropy(logits_ab, labels, reduction='mean') + F.cross_entropy(logits_ba, labels, reduction='mean')
        return loss


def train_SPQ(args):
    device = T.device('cpu')

    batch_size = args.batch_size

    N_books = args.N_books
    N_words = args.N_words
    L_word = args.L_word
    tau_q = args.soft_quantization_scale
    tau_cqc = args.contrastive_temperature

    N_bits = int(N_books * np.sqrt(N_words))
    print('%d'%N_bits +  '-bit to retrieval')

    trainloader = [(T.rand(batch_size, 3, 16, 16), T.randint(0, args.num_cls, (batch_size,))) for _ in range(2)]

    class Quantization_Head(nn.Module):
        def __init__(self, N_words, N_books, L_word, tau_q):
            super(Quantization_Head, self).__init__()
            self.fc = nn.Linear(512, N_books * L_word)
            nn.init.xavier_uniform_(self.fc.weight)

            # Codebooks
            self.C = T.nn.Parameter(Variable((T.randn(N_words, N_books * L_word)).type(T.float32), requires_grad=True))
            nn.init.xavier_uniform_(self.C)

            self.N_books = N_books
            self.L_word = L_word
            self.tau_q = tau_q

        def forward(self, input):
            X = self.fc(input)
            Z = Soft_Quantization(X, self.C, self.N_books, self.tau_q)
            return X, Z
        
    Q = Quantization_Head(N_words, N_books, L_word, tau_q)
    net = nn.Sequential(ResNet_Baseline(), Q)

    criterion = CQCLoss(device, batch_size, tau_cqc)

    optimizer = T.optim.Adam(net.parameters(), lr=3e-4, weight_decay=10e-6)

    mAP = 0.0
    for epoch in range(args.eval_epoch):  # loop over the dataset multiple times
        running_loss = 0.0

        for i, data in enumerate(trainloader, 0):
            inputs = data[0].to(device)
            Ia = Augmentation(inputs)
            Ib = Augmentation(inputs)

            optimizer.zero_grad()

            Xa, Za = net(Ia)
            Xb, Zb = net(Ib)

            loss = criterion(Xa, Xb, Za, Zb)
            loss.backward()
            optimizer.step()

            running_loss += loss.item()

        if (epoch+1) % args.eval_epoch == 0:
            mAP = DoRetrieval(device, args, net, Q.C)
            print('mAP: %.4f' % mAP)


if __name__ == '__main__':
    args = argparse.Namespace(batch_size=6, N_books=4, N_words=8, L_word=4, soft_quantization_scale=5.0,
                              contrastive_temperature=0.5, num_cls=10, eval_epoch=1, Top_N=10)
    train_SPQ(args)
