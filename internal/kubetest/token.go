package kubetest

import authv1 "k8s.io/api/authentication/v1"

// authenticationTokenRequest asks for an hour's token (the API server's
// minimum is ten minutes).
var authenticationTokenRequest = func() authv1.TokenRequest {
	secs := int64(3600)
	return authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}
}()
