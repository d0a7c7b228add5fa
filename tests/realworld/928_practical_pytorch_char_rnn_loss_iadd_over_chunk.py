"""spro/practical-pytorch char-rnn-generation: train() starts `loss = 0` and does `loss += criterion(output, target[c])` for every character while feeding the GRU hidden state forward, then one backward per chunk; generate() samples from `output.data.view(-1).div(temperature).exp()`. Safe."""
# outcome: ok
# source: https://github.com/spro/practical-pytorch/blob/c520c52e68e945d88fff563dba1c028b6ec0197b/char-rnn-generation/train.py
# repo: spro/practical-pytorch
# category: iteration
import string
import random
import time
import math

import torch
import torch.nn as nn
from torch.autograd import Variable


# ---- char-rnn-generation/helpers.py (a fixed text instead of read_file + unidecode) ----
all_characters = string.printable
n_characters = len(all_characters)

def read_file(filename):
    file = "What is this? " * 40
    return file, len(file)

# Turning a string into a tensor

def char_tensor(string):
    tensor = torch.zeros(len(string)).long()
    for c in range(len(string)):
        tensor[c] = all_characters.index(string[c])
    return Variable(tensor)

# Readable time elapsed

def time_since(since):
    s = time.time() - since
    m = math.floor(s / 60)
    s -= m * 60
    return '%dm %ds' % (m, s)


# ---- char-rnn-generation/model.py ----
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, n_layers=1):
        super(RNN, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers

        self.encoder = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers)
        self.decoder = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        input = self.encoder(input.view(1, -1))
        output, hidden = self.gru(input.view(1, 1, -1), hidden)
        output = self.decoder(output.view(1, -1))
        return output, hidden

    def init_hidden(self):
        return Variable(torch.zeros(self.n_layers, 1, self.hidden_size))


# ---- char-rnn-generation/generate.py ----
def generate(decoder, prime_str='A', predict_len=100, temperature=0.8):
    hidden = decoder.init_hidden()
    prime_input = char_tensor(prime_str)
    predicted = prime_str

    # Use priming string to "build up" hidden state
    for p in range(len(prime_str) - 1):
        _, hidden = decoder(prime_input[p], hidden)
        
    inp = prime_input[-1]
    
    for p in range(predict_len):
        output, hidden = decoder(inp, hidden)
        
        # Sample from the network as a multinomial distribution
        output_dist = output.data.view(-1).div(temperature).exp()
        top_i = torch.multinomial(output_dist, 1)[0]
        
        # Add predicted character to string and use as next input
        predicted_char = all_characters[top_i]
        predicted += predicted_char
        inp = char_tensor(predicted_char)

    return predicted


# ---- char-rnn-generation/train.py (args shrunk; loss.data[0] -> loss.item() and target[c] -> target[c].view(1) for current torch; no save) ----
class args:
    filename = 'shakespeare.txt'
    n_epochs = 3
    print_every = 1
    hidden_size = 16
    n_layers = 2
    learning_rate = 0.01
    chunk_len = 20

file, file_len = read_file(args.filename)

def random_training_set(chunk_len):
    start_index = random.randint(0, file_len - chunk_len)
    end_index = start_index + chunk_len + 1
    chunk = file[start_index:end_index]
    inp = char_tensor(chunk[:-1])
    target = char_tensor(chunk[1:])
    return inp, target

decoder = RNN(n_characters, args.hidden_size, n_characters, args.n_layers)
decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=args.learning_rate)
criterion = nn.CrossEntropyLoss()

start = time.time()
all_losses = []
loss_avg = 0

def train(inp, target):
    hidden = decoder.init_hidden()
    decoder.zero_grad()
    loss = 0

    for c in range(args.chunk_len):
        output, hidden = decoder(inp[c], hidden)
        loss += criterion(output, target[c].view(1))

    loss.backward()
    decoder_optimizer.step()

    return loss.item() / args.chunk_len

print("Training for %d epochs..." % args.n_epochs)
for epoch in range(1, args.n_epochs + 1):
    loss = train(*random_training_set(args.chunk_len))
    loss_avg += loss

    if epoch % args.print_every == 0:
        print('[%s (%d %d%%) %.4f]' % (time_since(start), epoch, epoch / args.n_epochs * 100, loss))
        print(generate(decoder, 'Wh', 20), '\n')
