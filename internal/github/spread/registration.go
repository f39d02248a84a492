package spread

import (
	"context"
	"fmt"
	"net/http"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
)

var _ scaleset.RegistrationTokenSource = (*GitHub)(nil)

// RegistrationToken mints a runner registration token for a scale-set
// client through the App that can go soonest: a registration token belongs
// to the owner, whichever installation minted it.
func (g *GitHub) RegistrationToken(ctx context.Context, owner github.Owner) (scaleset.RegistrationToken, error) {
	return call(ctx, g, "create_registration_token", owner, http.MethodPost, func(a App, o github.Owner) (scaleset.RegistrationToken, error) {
		src, ok := a.(scaleset.RegistrationTokenSource)
		if !ok {
			return scaleset.RegistrationToken{}, fmt.Errorf("%w: this App's client cannot mint registration tokens", github.ErrMisconfigured)
		}
		return src.RegistrationToken(ctx, o)
	})
}
