package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// core is a REST client of the API's core group (v1) in one namespace,
// with a scheme of the core group's types only. client-go's typed clients
// register every API group's types through their shared scheme, which
// would add ~18 MB to runfleet's binary for three resources.
type core struct {
	rc     *rest.RESTClient
	ns     string
	params runtime.ParameterCodec
}

var coreScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func newCore(cfg *rest.Config, namespace string) (*core, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(coreScheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "runfleet"
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &core{rc: rc, ns: namespace, params: runtime.NewParameterCodec(coreScheme)}, nil
}

func (c *core) create(ctx context.Context, resource string, body, out runtime.Object) error {
	return c.rc.Post().Namespace(c.ns).Resource(resource).Body(body).Do(ctx).Into(out)
}

func (c *core) get(ctx context.Context, resource, name string, out runtime.Object) error {
	return c.rc.Get().Namespace(c.ns).Resource(resource).Name(name).Do(ctx).Into(out)
}

func (c *core) list(ctx context.Context, resource string, opts metav1.ListOptions, out runtime.Object) error {
	return c.rc.Get().Namespace(c.ns).Resource(resource).VersionedParams(&opts, c.params).Do(ctx).Into(out)
}

func (c *core) update(ctx context.Context, resource, name string, body, out runtime.Object) error {
	return c.rc.Put().Namespace(c.ns).Resource(resource).Name(name).Body(body).Do(ctx).Into(out)
}

func (c *core) patch(ctx context.Context, resource, name string, pt types.PatchType, data []byte) error {
	return c.rc.Patch(pt).Namespace(c.ns).Resource(resource).Name(name).Body(data).Do(ctx).Error()
}

func (c *core) delete(ctx context.Context, resource, name string, opts metav1.DeleteOptions) error {
	return c.rc.Delete().Namespace(c.ns).Resource(resource).Name(name).Body(&opts).Do(ctx).Error()
}

func (c *core) deleteCollection(ctx context.Context, resource string, opts metav1.DeleteOptions, sel metav1.ListOptions) error {
	return c.rc.Delete().Namespace(c.ns).Resource(resource).VersionedParams(&sel, c.params).Body(&opts).Do(ctx).Error()
}
