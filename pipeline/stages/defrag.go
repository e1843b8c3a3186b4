package stages

import (
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
)

// The defrag family: migration plans on fragmented states, from given migration logs (`defrag
// plan --log`, `defrag demos`: it has no expert-logs stage); the rows and the episodes read
// the defrag section's rewards.
func init() {
	family.Register(family.Family{
		Name:     env.DefragName,
		Dataset:  entityDataset(func(c config.Config) (any, error) { o := defragRewards(c.Defrag); return &o, nil }),
		Sections: func(c config.Config) any { return c.Defrag },
	})
}
