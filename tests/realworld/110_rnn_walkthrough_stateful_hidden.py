"""The RNN-walkthrough char model with the user's stateful change: forward feeds self.hidden from the previous epoch back into self.rnn without detaching it, so the second loss.backward() runs into the first epoch's freed graph."""
# outcome: retention-error
# source: https://github.com/gabrielloye/RNN-walkthrough/issues/3
# repo: gabrielloye/RNN-walkthrough
# category: retention
# twin: 111_rnn_walkthrough_stateful_hidden_fixed.py
import torch
from torch import nn
from torch.autograd import Variable

import numpy as np

text = ['hey how are you','good i am fine','have a nice day']

# Join all the sentences together and extract the unique characters from the combined sentences
chars = set(''.join(text))

# Creating a dictionary that maps integers to the characters
int2char = dict(enumerate(chars))

# Creating another dictionary that maps characters to integers
char2int = {char: ind for ind, char in int2char.items()}

print(char2int)

maxlen = len(max(text, key=len))
print("The longest string has {} characters".format(maxlen))

# Padding

# A simple loop that loops through the list of sentences and adds a ' ' whitespace until the length of the sentence matches
# the length of the longest sentence
for i in range(len(text)):
    while len(text[i])<maxlen:
        text[i] += ' '

# Creating lists that will hold our input and target sequences
input_seq = []
target_seq = []

for i in range(len(text)):
    # Remove last character for input sequence
    input_seq.append(text[i][:-1])

    # Remove firsts character for target sequence
    target_seq.append(text[i][1:])
    print("Input Sequence: {}\nTarget Sequence: {}".format(input_seq[i], target_seq[i]))

for i in range(len(text)):
    input_seq[i] = [char2int[character] for character in input_seq[i]]
    target_seq[i] = [char2int[character] for character in target_seq[i]]

dict_size = len(char2int)
seq_len = maxlen - 1
batch_size = len(text)

def one_hot_encode(sequence, dict_size, seq_len, batch_size):
    # Creating a multi-dimensional array of zeros with the desired output shape
    features = np.zeros((batch_size, seq_len, dict_size), dtype=np.float32)

    # Replacing the 0 at the relevant character index with a 1 to represent that character
    for i in range(batch_size):
        for u in range(seq_len):
            features[i, u, sequence[i][u]] = 1
    return features

input_seq = one_hot_encode(input_seq, dict_size, seq_len, batch_size)
print("Input shape: {} --> (Batch Size, Sequence Length, One-Hot Encoding Size)".format(input_seq.shape))

input_seq = Variable(torch.from_numpy(input_seq))
target_seq = Variable(torch.LongTensor(target_seq))

class Model(nn.Module):
    def __init__(self, input_size, output_size, hidden_dim, n_layers):
        super(Model, self).__init__()

        self.hidden_dim = hidden_dim
        self.n_layers = n_layers

        self.rnn = nn.RNN(input_size, hidden_dim, n_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, output_size)
        self.hidden = None

    def forward(self, x):

        batch_size = x.size(0)
        if self.hidden is None:
            self.hidden = self.init_hidden(batch_size)
        out, self.hidden = self.rnn(x, self.hidden)  # error: IPL004

        out = out.contiguous().view(-1, self.hidden_dim)
        out = self.fc(out)

        return out, self.hidden

    def init_hidden(self, batch_size):
        hidden = torch.zeros(self.n_layers, batch_size, self.hidden_dim)
        return Variable(hidden)

model = Model(input_size=dict_size, output_size=dict_size, hidden_dim=12, n_layers=1)
n_epochs = 3
lr=0.01

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=lr)

for epoch in range(1, n_epochs + 1):
    optimizer.zero_grad()
    output, hidden = model(input_seq)
    loss = criterion(output, target_seq.view(-1))
    loss.backward()
    optimizer.step()

    if epoch%10 == 0:
        print('Epoch: {}/{}.............'.format(epoch, n_epochs), end=' ')
        print("Loss: {:.4f}".format(loss.item()))
        pred = output.max(dim=1)[1]
        pred_str = [int2char[p.item()] for p in pred]
