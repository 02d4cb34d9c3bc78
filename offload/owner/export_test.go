package owner

import "github.com/ferrylabs/ferry/staging"

func (w *Owner) Arena() *staging.Arena { return w.arena }
