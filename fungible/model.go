package fungible

import "github.com/schedrl/schedrl/jobs"

// LoadSpeedModel is Gavel's table with the Synergy profiles at profiles, mapped to Gavel's job
// types by the table at mapping (data/synergy/profiles.json, data/fungible/gavel_synergy_models.csv).
func LoadSpeedModel(table *jobs.Throughputs, profiles, mapping string) (SpeedModel, error) {
	p, err := LoadProfiles(profiles)
	if err != nil {
		return SpeedModel{}, err
	}
	sens, err := LoadSensitivity(mapping, p)
	if err != nil {
		return SpeedModel{}, err
	}
	return SpeedModel{Tput: GavelTable(table), Sens: sens}, nil
}
