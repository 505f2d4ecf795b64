package console_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/console/browsertest"
	"github.com/skillstream/skillstream/providers/store"
)

// TestBrowserSkills, in a real Chromium: the skills page, a hostileDesc
// skill's page and its diff show the hostileDesc text as text and run none
// of it (the flag its script would set stays undefined, no dialog
// opens, no image or javascript: link is made of it); an operator rolls
// a skill back from its page through the confirmation, which shows the
// live sessions.
func TestBrowserSkills(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	// A second revision of the hostileDesc skill, so that its diff shows
	// hostileDesc lines on both sides.
	pushDir(t, e.pb, writeSkill(t, t.TempDir(), "evil", hostileDesc, "Body "+hostileDesc+"\n<script>window.pwned=5</script>", nil), store.PushOptions{})

	ctx, log := browsertest.New(t)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var dialogs atomic.Int32
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.ts.URL+"/skills"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, operatorToken),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`table.skills`),
	); err != nil {
		t.Fatal(err)
	}
	// safe checks that nothing of the hostileDesc text ran or became markup.
	safe := func(where string) {
		t.Helper()
		pwned, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof window.pwned`))
		if err != nil || pwned != "undefined" {
			t.Errorf("%s: window.pwned is %s (%v): the hostileDesc text ran", where, pwned, err)
		}
		made, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('main img, main script:not([src]):not([type="application/json"]), a[href^="javascript:"], [onerror]').length`))
		if err != nil || made != 0 {
			t.Errorf("%s: %d elements made of the hostileDesc text (%v)", where, made, err)
		}
		if n := dialogs.Load(); n != 0 {
			t.Errorf("%s: %d dialogs opened", where, n)
		}
	}
	desc, err := chromedp.Run(ctx, chromedp.Text(`tr[data-name="evil"] .desc`))
	if err != nil || !strings.Contains(desc, `<script>window.pwned=1;alert(1)</script> "><img src=x onerror=`) || !strings.Contains(desc, "javascript:window.pwned=4") {
		t.Errorf("the hostileDesc description is not shown as text: %q (%v)", desc, err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr.skill')].map(r => r.dataset.name + ' ' + r.querySelector('.source').innerText + ' ' + r.querySelector('.state').innerText + ' ' + r.querySelector('.sig .chip').innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"draftie store global draft unsigned", "gone store global stable revoked", "libskill library stable unsigned", "localskill folder custom stable unsigned", "report store global stable unsigned", "signed store global stable untrusted", "trusty store global stable trusted"} {
		found := false
		for _, r := range rows {
			found = found || r == w
		}
		if !found {
			t.Errorf("no row %q in %q", w, rows)
		}
	}
	safe("skills page")

	// The search, from the form.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(`input[name=q]`, "weekly"),
		chromedp.Submit(`input[name=q]`),
		chromedp.WaitVisible(`input[name=q][value="weekly"]`), // the new page
	); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.skill').length`)); err != nil || n != 1 {
		t.Errorf("search for weekly: %d rows (%v)", n, err)
	}

	// The hostileDesc skill's page and its diff.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/skills/evil?in=global"), chromedp.WaitVisible(`h1.name`)); err != nil {
		t.Fatal(err)
	}
	if d, err := chromedp.Run(ctx, chromedp.Text(`td.desc`)); err != nil || !strings.Contains(d, "<script>window.pwned=1") {
		t.Errorf("skill page description %q (%v)", d, err)
	}
	safe("skill page")
	if err := chromedp.Do(ctx, chromedp.Click(`#compare`), chromedp.WaitVisible(`table.diff`)); err != nil {
		t.Fatal(err)
	}
	if d, err := chromedp.Run(ctx, chromedp.Text(`table.diff`)); err != nil || !strings.Contains(d, "<script>window.pwned=5</script>") {
		t.Errorf("the diff does not show the hostileDesc line as text: %q (%v)", d, err)
	}
	safe("diff page")

	// Roll back report to revision 1 from its page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.ts.URL+"/skills/report?in=global"),
		chromedp.WaitVisible(`tr[data-rev="1"] a.rollback`),
		chromedp.Click(`tr[data-rev="1"] a.rollback`),
		chromedp.WaitVisible(`.confirm`),
	); err != nil {
		t.Fatal(err)
	}
	if reach, err := chromedp.Run(ctx, chromedp.Text(`.reach`)); err != nil || reach != "2 live sessions" {
		t.Errorf("the confirmation shows %q (%v), want 2 live sessions", reach, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#confirm`), chromedp.WaitVisible(`p.done`), chromedp.WaitVisible(`tr[data-rev="3"]`)); err != nil {
		t.Fatal(err)
	}
	h, err := e.pb.History(context.Background(), skillstore.Global, "report")
	if err != nil || len(h) != 3 || h[2].Record.Digest != h[0].Record.Digest {
		t.Errorf("the rollback did not publish rev 1's files as rev 3 (%v)", err)
	}
	if got := e.Actions(); len(got) < 1 || got[0].What != "skills rollback report --scope global --to 1" || got[0].Err != nil {
		t.Errorf("audited %+v", got)
	}
	safe("after the rollback")

	// Release draftie's draft to a quarter of the sessions from its page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.ts.URL+"/skills/draftie?in=global"),
		chromedp.WaitVisible(`#act-release`),
		chromedp.SetValue(`input[name=share]`, "25%"),
		chromedp.Click(`#act-release`),
		chromedp.WaitVisible(`.confirm`),
	); err != nil {
		t.Fatal(err)
	}
	if reach, err := chromedp.Run(ctx, chromedp.Text(`.reach`)); err != nil || reach != "about 0 of 2 live sessions (25% of them)" {
		t.Errorf("the release's confirmation shows %q (%v)", reach, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#confirm`), chromedp.WaitVisible(`p.done`)); err != nil {
		t.Fatal(err)
	}
	if st, err := e.pb.Status(context.Background(), skillstore.Global, "draftie"); err != nil || st.Channel != store.ChannelCanary || st.Share != 2500 {
		t.Errorf("after the release from the page: %s %d (%v)", st.Channel, st.Share, err)
	}
	if state, err := chromedp.Run(ctx, chromedp.Text(`td.state .chip`)); err != nil || state != "canary 25%" {
		t.Errorf("the page shows the state %q (%v)", state, err)
	}
	if errs := log.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
}
