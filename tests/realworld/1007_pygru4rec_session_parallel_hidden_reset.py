"""pyGRU4REC's session-parallel training: the GRU hidden state is carried from one mini-batch step to the next (`hidden = hidden.data` after each step), rows of finished sessions are zeroed in place (`hidden[:,mask,:] = 0`), and the one-hot buffer is refilled in place (`zero_()`, `scatter_`) every step."""
# outcome: ok
# source: https://github.com/yhs968/pyGRU4REC/blob/09759efaace0d3a646039571581b43c277ace87e/modules/model.py
# repo: yhs968/pyGRU4REC
# category: iteration
import time
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable


# ---- modules/optimizer.py ----
class Optimizer:
    def __init__(self, params, optimizer_type = 'Adagrad', lr = .05, 
                 momentum = 0, weight_decay = 0, eps = 1e-6):
        if optimizer_type == 'RMSProp':
            self.optimizer = optim.RMSprop(params,lr=lr,
                                           eps=eps,
                                           weight_decay=weight_decay,
                                           momentum=momentum)
        elif optimizer_type == 'Adagrad':
            self.optimizer = optim.Adagrad(params,lr=lr,
                                           weight_decay=weight_decay)
        elif optimizer_type == 'Adam':
            self.optimizer = optim.Adam(params,
                                        lr=lr,
                                        eps=eps,
                                        weight_decay=weight_decay)
        else:
            raise NotImplementedError
                 
    def zero_grad(self):
        self.optimizer.zero_grad()
    
    def step(self):
        self.optimizer.step()


# ---- modules/loss.py ----
class LossFunction(nn.Module):
    def __init__(self, loss_type='TOP1', use_cuda=True):
        super().__init__()
        self.loss_type = loss_type
        self.use_cuda = use_cuda
        if loss_type == 'TOP1':
            self._loss_fn = TOP1Loss()
        else:
            raise NotImplementedError

    def forward(self, logit):
        return self._loss_fn(logit)


class TOP1Loss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logit):
        # differences between the item scores
        diff = -(logit.diag().view(-1, 1).expand_as(logit) - logit)
        # final loss
        loss = F.sigmoid(diff).mean() + F.sigmoid(logit ** 2).mean()

        return loss


# ---- modules/layer.py ----
class GRU(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, num_layers = 1,
                 dropout_hidden = .5, dropout_input = 0, batch_size = 50,
                 use_cuda = True, training = True):
        
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.num_layers = num_layers
        self.dropout_input = dropout_input
        self.dropout_hidden = dropout_hidden
        
        self.batch_size = batch_size
        self.use_cuda = use_cuda
        self.training = training
        
        self.onehot_buffer = self.init_emb()
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, dropout = dropout_hidden)
        
        if self.use_cuda:
            self = self.cuda()
        
    def forward(self, embedded, target, hidden):
        if self.training:
            # Apply dropout to inputs when training
            p_drop = torch.Tensor(embedded.size(0),1).fill_(1 - self.dropout_input) #(B,1)
            mask = Variable(torch.bernoulli(p_drop).expand_as(embedded)) #(B,C)
            if self.use_cuda: mask = mask.cuda()
            embedded = embedded * mask #(B,C)
        embedded = embedded.unsqueeze(0) #(1,B,C)
        
        # Go through the GRU layer
        output, hidden = self.gru(embedded, hidden) #(num_layers,B,H)
        
        output = output.view(-1, output.size(-1)) #(B,H)
        logit = self.tanh(self.h2o(output)) #(B,C)
        
        if self.training:
            logit = logit[:,target.view(-1)] #(B,B). Sample outputs
        
        return logit, hidden
    
    def emb(self, input, volatile = False):
        # flush the buffer
        self.onehot_buffer.zero_()
        # fill the buffer with 1 where needed
        index = input.view(-1,1)
        self.onehot_buffer.scatter_(1, index, 1)
        
        v = Variable(self.onehot_buffer, volatile=volatile)
        
        return v.cuda() if self.use_cuda else v
    
    def init_emb(self):
        onehot_buffer = torch.FloatTensor(self.batch_size, self.output_size)
        if self.use_cuda: onehot_buffer = onehot_buffer.cuda()
        
        return onehot_buffer
    
    def init_hidden(self):
        h0 = Variable(torch.zeros(self.num_layers, self.batch_size, self.hidden_size))
        
        return h0.cuda() if self.use_cuda else h0


# ---- modules/model.py (train/test/pandas helpers left out) ----
class GRU4REC:
    def __init__(self, input_size, hidden_size, output_size, num_layers = 1,
                 optimizer_type = 'Adagrad', lr = .05, weight_decay = 0,
                 momentum = 0, eps = 1e-6, loss_type = 'TOP1',
                 clip_grad = -1, dropout_input=.0, dropout_hidden = .5,
                 batch_size = 50, use_cuda = True, time_sort = False, pretrained = None):
        # Initialize the GRU Layer
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.batch_size = batch_size
        self.use_cuda = use_cuda
        if pretrained is None:
            self.gru = GRU(input_size, hidden_size, output_size, num_layers,
                           dropout_input = dropout_input,
                           dropout_hidden = dropout_hidden,
                           use_cuda = use_cuda,
                           batch_size = batch_size)
        else:
            self.gru = pretrained
        # Initialize the optimizer
        self.optimizer_type = optimizer_type
        self.weight_decay = weight_decay
        self.momentum = momentum
        self.lr = lr
        self.eps = eps
        self.optimizer = Optimizer(self.gru.parameters(),
                                   optimizer_type = optimizer_type,
                                   lr = lr,
                                   weight_decay = weight_decay,
                                   momentum = momentum,
                                   eps = eps)
        # Initialize the loss function
        self.loss_type = loss_type
        self.loss_fn = LossFunction(loss_type, use_cuda)
        # gradient clipping(optional)
        self.clip_grad = clip_grad 
        # etc
        self.time_sort = time_sort

    def run_epoch(self, df, click_offsets, session_idx_arr):
        mb_losses = []
        # initializations
        iters = np.arange(self.batch_size)
        maxiter = iters.max()
        start = click_offsets[session_idx_arr[iters]]
        end = click_offsets[session_idx_arr[iters]+1]
        # initialize the hidden state
        hidden = self.gru.init_hidden().data
        
        optimizer = self.optimizer
        
        # Start the training loop
        finished = False
        while not finished:
            minlen = (end-start).min()
            # Item indices(for embedding) for clicks where the first sessions start
            idx_target = df.iidx.values[start]
            for i in range(minlen - 1):
                # Build inputs, targets, and hidden states
                idx_input = idx_target
                idx_target = df.iidx.values[start + i + 1]
                input = torch.LongTensor(idx_input) #(B) At first, input is a Tensor
                target = Variable(torch.LongTensor(idx_target)) #(B)
                if self.use_cuda:
                    input = input.cuda()
                    target = target.cuda()
                # Now, convert into an embedded Variable
                embedded = self.gru.emb(input)
                hidden = Variable(hidden)
                
                # Go through the GRU layer
                logit, hidden = self.gru(embedded, target, hidden)
                
                # Calculate the mini-batch loss
                mb_loss = self.loss_fn(logit)
                mb_losses.append(mb_loss.item())  # mb_loss.data[0] in the torch 0.3 original
                
                # flush the gradient b/f backprop
                optimizer.zero_grad()
                
                # Backprop
                mb_loss.backward()
                
                # Gradient Clipping(Optional)
                if self.clip_grad != -1:
                    for p in self.gru.parameters():
                        p.grad.data.clamp_(max=self.clip_grad)
                
                # Mini-batch GD
                optimizer.step()
                
                # Detach the hidden state for later reuse
                hidden = hidden.data
                
            # click indices where a particular session meets second-to-last element
            start = start + (minlen - 1)
            # see if how many sessions should terminate
            mask = np.arange(len(iters))[(end-start)<=1]
            for idx in mask:
                maxiter += 1
                if maxiter >= len(click_offsets)-1:
                    finished = True
                    break
                # update the next starting/ending point
                iters[idx] = maxiter
                start[idx] = click_offsets[session_idx_arr[maxiter]]
                end[idx] = click_offsets[session_idx_arr[maxiter]+1]
            
            # reset the rnn hidden state to zero after transition
            if len(mask)!= 0:
                hidden[:,mask,:] = 0

        avg_epoch_loss = np.mean(mb_losses)
        
        return avg_epoch_loss


if __name__ == "__main__":
    # a tiny click log in place of the RecSys15 DataFrame (what init_data would return)
    rng = np.random.RandomState(0)
    n_items, n_sessions, batch_size = 12, 10, 4
    lengths = rng.randint(2, 5, size=n_sessions)
    click_offsets = np.zeros(n_sessions + 1, dtype=np.int32)
    click_offsets[1:] = np.cumsum(lengths)
    session_idx_arr = np.arange(n_sessions)
    df = SimpleNamespace(iidx=SimpleNamespace(values=rng.randint(0, n_items, size=click_offsets[-1])))

    model = GRU4REC(n_items, 8, n_items, batch_size=batch_size, use_cuda=False, lr=0.05)
    for epoch in range(2):
        start_time = time.time()
        loss = model.run_epoch(df, click_offsets, session_idx_arr)
        print(f'Epoch:{epoch+1:2d}/Loss:{loss:0.3f}/TrainingTime:{(time.time() - start_time) / 60:0.3f}(min)')
