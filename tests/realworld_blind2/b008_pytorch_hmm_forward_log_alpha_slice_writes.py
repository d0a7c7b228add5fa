"""pytorch_HMM: the HMM forward algorithm fills log_alpha[:, t, :] in place step by step, each step reading the previous row through the log-domain matmul, and trains the HMM by backpropagating log p(x)."""
# outcome: ok
# source: https://github.com/lorenlugosch/pytorch_HMM/blob/master/models.py
# repo: lorenlugosch/pytorch_HMM
# category: iteration
import torch


class HMM(torch.nn.Module):
	"""
	Hidden Markov Model.
	(For now, discrete observations only.)
	- forward(): computes the log probability of an observation sequence.
	- viterbi(): computes the most likely state sequence.
	"""
	def __init__(self, config):
		super(HMM, self).__init__()
		self.M = config.M # number of possible observations
		self.N = config.N # number of states
		self.unnormalized_state_priors = torch.nn.Parameter(torch.randn(self.N))
		self.transition_model = TransitionModel(self.N)
		self.emission_model = EmissionModel(self.N,self.M)
		self.is_cuda = False

	def forward(self, x, T):
		"""
		x : IntTensor of shape (batch size, T_max)
		T : IntTensor of shape (batch size)

		Compute log p(x) for each example in the batch.
		T = length of each example
		"""
		batch_size = x.shape[0]; T_max = x.shape[1]
		log_state_priors = torch.nn.functional.log_softmax(self.unnormalized_state_priors, dim=0)
		log_alpha = torch.zeros(batch_size, T_max, self.N)

		log_alpha[:, 0, :] = self.emission_model(x[:,0]) + log_state_priors
		for t in range(1, T_max):
			log_alpha[:, t, :] = self.emission_model(x[:,t]) + self.transition_model(log_alpha[:, t-1, :], use_max=False)

		log_sums = log_alpha.logsumexp(dim=2)

		# Select the sum for the final timestep (each x has different length).
		log_probs = torch.gather(log_sums, 1, T.view(-1,1) - 1)
		return log_probs

	def viterbi(self, x, T):
		batch_size = x.shape[0]; T_max = x.shape[1]
		log_state_priors = torch.nn.functional.log_softmax(self.unnormalized_state_priors, dim=0)
		log_delta = torch.zeros(batch_size, T_max, self.N).float()
		psi = torch.zeros(batch_size, T_max, self.N).long()

		log_delta[:, 0, :] = self.emission_model(x[:,0]) + log_state_priors
		for t in range(1, T_max):
			max_val, argmax_val = self.transition_model(log_delta[:, t-1, :], use_max=True)
			log_delta[:, t, :] = self.emission_model(x[:,t]) + max_val
			psi[:, t, :] = argmax_val

		log_max = log_delta.max(dim=2)[0]
		viterbi_scores = torch.gather(log_max, 1, T.view(-1,1) - 1)

		z_star = []
		for i in range(0, batch_size):
			z_star_i = [ log_delta[i, T[i] - 1, :].max(dim=0)[1].item() ]
			for t in range(T[i] - 1, 0, -1):
				z_t = psi[i, t, z_star_i[0]].item()
				z_star_i.insert(0, z_t)

			z_star.append(z_star_i)

		return z_star, viterbi_scores

def log_domain_matmul(log_A, log_B, use_max=False):
	"""
	log_A : m x n
	log_B : n x p

	output : m x p matrix
	"""
	m = log_A.shape[0]
	n = log_A.shape[1]
	p = log_B.shape[1]

	log_A_expanded = torch.stack([log_A] * p, dim=2)
	log_B_expanded = torch.stack([log_B] * m, dim=0)

	elementwise_sum = log_A_expanded + log_B_expanded
	out = torch.logsumexp(elementwise_sum, dim=1)

	return out

def maxmul(log_A, log_B):
	m = log_A.shape[0]
	n = log_A.shape[1]
	p = log_B.shape[1]

	log_A_expanded = torch.stack([log_A] * p, dim=2)
	log_B_expanded = torch.stack([log_B] * m, dim=0)

	elementwise_sum = log_A_expanded + log_B_expanded
	out1, out2 = torch.max(elementwise_sum, dim=1)

	return out1, out2

class TransitionModel(torch.nn.Module):
	def __init__(self, N):
		super(TransitionModel, self).__init__()
		self.N = N # number of states
		self.unnormalized_transition_matrix = torch.nn.Parameter(torch.randn(N,N))

	def forward(self, log_alpha, use_max):
		log_transition_matrix = torch.nn.functional.log_softmax(self.unnormalized_transition_matrix, dim=1)

		if use_max:
			out1, out2 = maxmul(log_transition_matrix, log_alpha.transpose(0,1))
			return out1.transpose(0,1), out2.transpose(0,1)
		else:
			out = log_domain_matmul(log_transition_matrix, log_alpha.transpose(0,1))
			out = out.transpose(0,1)
			return out

class EmissionModel(torch.nn.Module):
	def __init__(self, N, M):
		super(EmissionModel, self).__init__()
		self.N = N # number of states
		self.M = M # number of possible observations
		self.unnormalized_emission_matrix = torch.nn.Parameter(torch.randn(N,M))

	def forward(self, x_t):
		emission_matrix = torch.nn.functional.log_softmax(self.unnormalized_emission_matrix, dim=1)
		out = emission_matrix[:, x_t].transpose(0,1)

		return out


# ---- training.py (random sequences instead of the names data set) ----
class Config:
	M = 6
	N = 4


if __name__ == "__main__":
	model = HMM(Config())
	optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.00001)
	for epoch in range(3):
		x = torch.randint(0, Config.M, (3, 7))
		T = torch.tensor([7, 5, 3])
		log_probs = model(x, T)
		loss = -log_probs.mean()
		optimizer.zero_grad()
		loss.backward()
		optimizer.step()
		print(epoch, loss.item())
	with torch.no_grad():
		print(model.viterbi(x, T)[0])
