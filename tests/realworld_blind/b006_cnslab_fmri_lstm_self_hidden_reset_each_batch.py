"""fMRI LSTM classifier: forward stores `self.hidden` from the LSTM, and each training iteration (and the test voting, without no_grad) starts by resetting `net.hidden = net.init_hidden(batch_size)`, so no step backwards into the last one's graph."""
# outcome: ok
# source: https://github.com/sgadgil6/cnslab_fmri/blob/b5c6ec71f82db8b9e31da50df96f60e067d23998/net/fmri_lstm.py
# repo: sgadgil6/cnslab_fmri
# category: retention
import torch
import torch.optim as optim
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
import random


# ---- net/fmri_lstm.py ----
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim, target_size, batch_size):
        super(fMRI_LSTM, self).__init__()
        self.hidden_dim = hidden_dim
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = self.init_hidden(batch_size=batch_size)
        self.dropout = nn.Dropout(p=0.5)
        self.target_size = target_size

    def init_hidden(self, batch_size):
        return (torch.randn(1, batch_size, self.hidden_dim).to(device), torch.randn(1, batch_size, self.hidden_dim).to(device))

    def forward(self, x):
        #x = x.T
        lstm_out, self.hidden = self.lstm(x, self.hidden)
        lstm_out = lstm_out.squeeze()[:, -1, :]
        out = self.dropout(lstm_out)
        linear_output = self.linear(out)
        #linear_output = self.dropo(linear_output)
        #mean_pooling_output = F.avg_pool1d(linear_output, kernel_size=1)
        final_output = torch.sigmoid(linear_output)
        return final_output


# ---- run_training_lstm.py (random windows instead of the HCP data, a few mini-batches) ----
print(device)

###### **model parameters**
W = 20  # window size
TS = 2  # number of voters per test subject

###### **training parameters**
LR = 0.001  # learning rate
batch_size = 8

###### setup model & data
net = fMRI_LSTM(16, 22,  1, batch_size=batch_size)
net.to(device)

criterion = nn.BCELoss()  # CrossEntropyLoss()
optimizer = optim.Adam(net.parameters(), lr=LR, weight_decay=0.001)

train_data = np.random.randn(16, 1, 40, 22, 1)
train_label = np.random.randint(0, 2, 16)
test_data = np.random.randn(16, 1, 40, 22, 1)
test_label = np.random.randint(0, 2, 16)

print(train_data.shape)

###### start training model
training_loss = 0.0

for epoch in range(3):  # number of mini-batches
    # select a random sub-set of subjects
    net.hidden = net.init_hidden(batch_size)
    net.train()
    idx_batch = np.random.permutation(int(train_data.shape[0]))
    idx_batch = idx_batch[:int(batch_size)]

    # construct a mini-batch by sampling a window W for each subject
    train_data_batch = np.zeros((batch_size, 1, W, 22, 1))
    train_label_batch = train_label[idx_batch]

    for i in range(batch_size):
        r1 = random.randint(0, train_data.shape[2] - W)
        train_data_batch[i] = train_data[idx_batch[i], :, r1:r1 + W, :, :]

    train_data_batch_dev = torch.from_numpy(train_data_batch).float().to(device)
    train_label_batch_dev = torch.from_numpy(train_label_batch).float().to(device)
    train_data_batch_dev = train_data_batch_dev.squeeze()
    # forward + backward + optimize
    optimizer.zero_grad()
    #net.hidden = net.init_hidden(batch_size)
    outputs = net(train_data_batch_dev)
    loss = criterion(outputs, train_label_batch_dev.unsqueeze(1))
    loss.backward()
    optimizer.step()

    # print training statistics
    training_loss += loss.item()
    if epoch % 2 == 0:  # print every T mini-batches
        # print(outputs)
        outputs = outputs.data.cpu().numpy() > 0.5
        train_acc = sum(outputs[:, 0] == train_label_batch) / train_label_batch.shape[0]
        print('[%d] training loss: %.3f training batch acc %f' % (epoch + 1, training_loss/1000, train_acc))
        training_loss = 0.0

    # validate on test subjects by voting
    if epoch % 2 == 0:  # print every K mini-batches
        net.eval()
        idx_batch = np.random.permutation(int(test_data.shape[0]))
        idx_batch = idx_batch[:int(batch_size)]

        test_label_batch = test_label[idx_batch]
        prediction = np.zeros((test_data.shape[0],))
        voter = np.zeros((test_data.shape[0],))
        for v in range(TS):
            idx = np.random.permutation(int(test_data.shape[0]))

            # testing also performed batch by batch (otherwise it produces error)
            for k in range(int(test_data.shape[0] / batch_size)):
                idx_batch = idx[int(batch_size * k):int(batch_size * (k + 1))]

                # construct random sub-sequences from a batch of test subjects
                test_data_batch = np.zeros((batch_size, 1, W, 22, 1))
                for i in range(batch_size):
                    r1 = random.randint(0, test_data.shape[2] - W)
                    test_data_batch[i] = test_data[idx_batch[i], :, r1:r1 + W, :, :]

                test_data_batch_dev = torch.from_numpy(test_data_batch).float().to(device)
                test_data_batch_dev = test_data_batch_dev.squeeze()
                #net.eval()
                outputs = net(test_data_batch_dev)
                outputs = outputs.data.cpu().numpy()
                #net.train()

                prediction[idx_batch] = prediction[idx_batch] + outputs[:, 0];
                voter[idx_batch] = voter[idx_batch] + 1;


        # average voting
        prediction = prediction / voter;
        # print(prediction)
        print(sum((prediction > 0.5) == test_label) / test_label.shape[0])
        net.train()
