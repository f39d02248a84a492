package config

import "time"

// Defaults for fields left unset (zero). A zero duration or count means
// "unset": to get a different value, write it.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultListen            = "127.0.0.1:8080"
	DefaultStoreKind         = StoreBolt
	DefaultStoreDir          = "./runfleet-data"
	DefaultWorkers           = 8
	DefaultReconcileInterval = 30 * time.Second
	DefaultDeleteBackoffMin  = time.Second
	DefaultDeleteBackoffMax  = 5 * time.Minute
	DefaultMaxReceives       = 10
	DefaultVisibilityTimeout = 5 * time.Minute
	// DefaultTakeoverGrace is engine.DefaultTakeoverGrace (config does not
	// import the engine).
	DefaultTakeoverGrace = time.Minute
	// DefaultBootstrapTimeout is GARM's: long enough for a cold VM image.
	DefaultBootstrapTimeout = 20 * time.Minute
	// DefaultProviderTimeout bounds a delete or a list.
	DefaultProviderTimeout = 5 * time.Minute
)

// applyDefaults fills unset fields. Negative values are left for validate
// to report.
func (c *Config) applyDefaults() {
	setDefault(&c.Webhook.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.Server.Listen, DefaultListen)
	setDefault(&c.Store.Kind, DefaultStoreKind)
	if c.Store.Kind == StoreBolt {
		setDefault(&c.Store.Dir, DefaultStoreDir)
	}
	setDefault(&c.Engine.Workers, DefaultWorkers)
	setDefault(&c.Engine.ReconcileInterval, DefaultReconcileInterval)
	setDefault(&c.Engine.DeleteBackoffMin, DefaultDeleteBackoffMin)
	setDefault(&c.Engine.DeleteBackoffMax, DefaultDeleteBackoffMax)
	setDefault(&c.Engine.MaxReceives, DefaultMaxReceives)
	setDefault(&c.Engine.VisibilityTimeout, DefaultVisibilityTimeout)
	setDefault(&c.Engine.TakeoverGrace, DefaultTakeoverGrace)
	c.Cache.applyDefaults()
	for i := range c.Pools {
		setDefault(&c.Pools[i].BootstrapTimeout, DefaultBootstrapTimeout)
		setDefault(&c.Pools[i].ProviderTimeout, DefaultProviderTimeout)
		c.Pools[i].Warm.applyDefaults()
	}
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}
