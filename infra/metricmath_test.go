package infra

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// evalMetricMath evaluates the CloudWatch metric math expression of query
// id for one period, as CloudWatch treats a period's datapoints: a nil
// value is a series without a datapoint there. It knows what the alarms
// use: numbers, ids (of metrics in inputs or of other expressions in
// exprs), + - * /, the comparisons > >= < <= (1 or 0), FILL(series,
// number) and IF(condition, a, b). Arithmetic on a missing datapoint, and
// a division by zero, give no datapoint.
func evalMetricMath(exprs map[string]string, id string, inputs map[string]*float64) (float64, error) {
	e := &mathEval{exprs: exprs, inputs: inputs, evaluating: map[string]bool{}}
	v, err := e.id(id)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, fmt.Errorf("%s: no datapoint", id)
	}
	return *v, nil
}

type mathEval struct {
	exprs      map[string]string
	inputs     map[string]*float64
	evaluating map[string]bool
}

func (e *mathEval) id(id string) (*float64, error) {
	if v, ok := e.inputs[id]; ok {
		return v, nil
	}
	src, ok := e.exprs[id]
	if !ok {
		return nil, fmt.Errorf("unknown id %q", id)
	}
	if e.evaluating[id] {
		return nil, fmt.Errorf("%s refers to itself", id)
	}
	e.evaluating[id] = true
	defer delete(e.evaluating, id)
	p := &mathParser{eval: e, toks: tokenize(src)}
	v, err := p.comparison()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("%s: unexpected %q", id, p.toks[p.pos])
	}
	return v, nil
}

func tokenize(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.HasPrefix(s[i:], ">=") || strings.HasPrefix(s[i:], "<="):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.ContainsRune("+-*/(),<>", c):
			toks = append(toks, string(c))
			i++
		default:
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_' || s[j] == '.') {
				j++
			}
			if j == i {
				j = i + 1
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

type mathParser struct {
	eval *mathEval
	toks []string
	pos  int
}

func (p *mathParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *mathParser) expect(tok string) error {
	if p.peek() != tok {
		return fmt.Errorf("want %q, got %q", tok, p.peek())
	}
	p.pos++
	return nil
}

func (p *mathParser) comparison() (*float64, error) {
	left, err := p.sum()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	if op != ">" && op != ">=" && op != "<" && op != "<=" {
		return left, nil
	}
	p.pos++
	right, err := p.sum()
	if err != nil || left == nil || right == nil {
		return nil, err
	}
	var holds bool
	switch op {
	case ">":
		holds = *left > *right
	case ">=":
		holds = *left >= *right
	case "<":
		holds = *left < *right
	default:
		holds = *left <= *right
	}
	if holds {
		return ptr(1), nil
	}
	return ptr(0), nil
}

func (p *mathParser) sum() (*float64, error) {
	return p.binary(p.product, "+", "-")
}

func (p *mathParser) product() (*float64, error) {
	return p.binary(p.operand, "*", "/")
}

func (p *mathParser) binary(next func() (*float64, error), ops ...string) (*float64, error) {
	left, err := next()
	if err != nil {
		return nil, err
	}
	for op := p.peek(); op == ops[0] || op == ops[1]; op = p.peek() {
		p.pos++
		right, err := next()
		if err != nil {
			return nil, err
		}
		if left == nil || right == nil {
			left = nil
			continue
		}
		switch op {
		case "+":
			left = ptr(*left + *right)
		case "-":
			left = ptr(*left - *right)
		case "*":
			left = ptr(*left * *right)
		case "/":
			if *right == 0 {
				left = nil
			} else {
				left = ptr(*left / *right)
			}
		}
	}
	return left, nil
}

func (p *mathParser) operand() (*float64, error) {
	tok := p.peek()
	p.pos++
	switch {
	case tok == "(":
		v, err := p.comparison()
		if err != nil {
			return nil, err
		}
		return v, p.expect(")")
	case tok == "FILL" || tok == "IF":
		args, err := p.args()
		if err != nil {
			return nil, err
		}
		if tok == "FILL" {
			if len(args) != 2 || args[1] == nil {
				return nil, fmt.Errorf("FILL wants (series, number)")
			}
			if args[0] == nil {
				return args[1], nil
			}
			return args[0], nil
		}
		if len(args) != 3 {
			return nil, fmt.Errorf("IF wants (condition, a, b)")
		}
		if args[0] == nil {
			return nil, nil
		}
		if *args[0] != 0 {
			return args[1], nil
		}
		return args[2], nil
	case tok != "" && (unicode.IsDigit(rune(tok[0])) || tok[0] == '.'):
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			return nil, err
		}
		return &f, nil
	case tok != "" && unicode.IsLower(rune(tok[0])):
		return p.eval.id(tok)
	}
	return nil, fmt.Errorf("unexpected %q", tok)
}

func (p *mathParser) args() ([]*float64, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var args []*float64
	for {
		v, err := p.comparison()
		if err != nil {
			return nil, err
		}
		args = append(args, v)
		if p.peek() == ")" {
			p.pos++
			return args, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}
