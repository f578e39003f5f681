package sampling

// Sampler is one step of the chain: llama.cpp's llama_sampler_i. Apply reshapes or
// filters the candidates (or selects one); Accept tells the sampler which token was
// finally chosen, so samplers with history (penalties, DRY, mirostat) can update it;
// Reset forgets the history and restarts the random generator from the seed; Clone
// returns an independent copy with the same parameters and state.
//
// Samplers without history implement Accept and Reset as no-ops.
type Sampler interface {
	// Name is llama.cpp's sampler name ("top-k", "dist", "temp-ext", ...).
	Name() string
	// Apply runs the sampler on c. It returns an error only for bad input (e.g. an
	// empty candidate list); it never panics.
	Apply(c *Candidates) error
	// Accept records the token that was chosen at this step.
	Accept(id int)
	// Reset clears history and reseeds random generators.
	Reset()
	// Clone returns an independent copy, history included.
	Clone() Sampler
}

// stateless provides no-op Accept and Reset for samplers without history.
type stateless struct{}

// Accept does nothing: the sampler has no history.
func (stateless) Accept(int) {}

// Reset does nothing: the sampler has no state.
func (stateless) Reset() {}
