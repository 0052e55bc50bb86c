package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// dockerfile is what the Dockerfile says of the image: its final stage, and
// the build stage's `go build`. Only the instructions it uses are read; any
// other fails the parse, so a new one cannot slip past the comparison.
type dockerfile struct {
	Base       string // the final stage's FROM
	Copies     []dockerCopy
	User       string
	WorkDir    string
	Env        []string
	Entrypoint []string
	Cmd        []string
	GoEnv      []string // VAR=value words before `go build`
	GoArgs     []string // the words after `go`
}

// dockerCopy is one COPY of the final stage: from a stage, or (From "") from
// the build context.
type dockerCopy struct {
	From, Src, Dst string
}

func parseDockerfile(path string) (dockerfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return dockerfile{}, err
	}
	var df dockerfile
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			return df, fmt.Errorf("line %d: continuation lines are not parsed", i+1)
		}
		instr, rest, _ := strings.Cut(line, " ")
		if err := df.apply(strings.ToUpper(instr), strings.TrimSpace(rest)); err != nil {
			return df, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return df, nil
}

// apply records one instruction. A FROM starts a stage: what the image
// declares is what the last stage does, so FROM resets it.
func (df *dockerfile) apply(instr, rest string) error {
	var err error
	switch instr {
	case "FROM":
		goEnv, goArgs := df.GoEnv, df.GoArgs
		*df = dockerfile{Base: strings.Fields(rest)[0], GoEnv: goEnv, GoArgs: goArgs}
	case "COPY":
		f := strings.Fields(rest)
		c := dockerCopy{}
		if strings.HasPrefix(f[0], "--from=") {
			c.From, f = strings.TrimPrefix(f[0], "--from="), f[1:]
		}
		if len(f) < 2 {
			return fmt.Errorf("COPY %s: want sources and a destination", rest)
		}
		c.Src, c.Dst = strings.Join(f[:len(f)-1], " "), f[len(f)-1]
		df.Copies = append(df.Copies, c)
	case "RUN":
		words := shellWords(rest)
		for i := 0; i+1 < len(words); i++ {
			if words[i] == "go" && words[i+1] == "build" {
				df.GoEnv, df.GoArgs = words[:i], words[i+1:]
			}
		}
	case "USER":
		df.User = rest
	case "WORKDIR":
		df.WorkDir = rest
	case "ENV":
		if !strings.Contains(rest, "=") || strings.Contains(rest, " ") {
			return fmt.Errorf("ENV %s: want one KEY=value", rest)
		}
		df.Env = append(df.Env, rest)
	case "ENTRYPOINT":
		df.Entrypoint, err = execForm(rest)
	case "CMD":
		df.Cmd, err = execForm(rest)
	default:
		return fmt.Errorf("instruction %s is not compared with the built image; teach the test", instr)
	}
	return err
}

// execForm reads the JSON array form (the only one that needs no shell).
func execForm(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%s: not the exec (JSON array) form: %w", s, err)
	}
	return v, nil
}

// shellWords splits s as a shell does words with double quotes, which is
// all the Dockerfile's RUN lines use.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestShellWords(t *testing.T) {
	got := shellWords(`A=0 go build -ldflags="-s -X a=$(cat V)" -o /out  ./x`)
	want := []string{"A=0", "go", "build", "-ldflags=-s -X a=$(cat V)", "-o", "/out", "./x"}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}
