# frozen_string_literal: true

require "spec_helper"
require_relative "support/chat_ui_app"
require "capybara"
require "capybara/rspec/matchers"
require "sqlite3"
require "zlib"

# `rails g llm_failover:chat_ui` in the minimal Rails 7.2 app (spec/fixtures/rails_app,
# copied to a temp dir), then the generated chat in headless Chromium: the app under
# Puma (`bin/rails server`), ActionCable's async adapter, ChatAnswerJob on ActiveJob's
# :async adapter with one thread, the providers two FakeProviders of this process. Each bin/rails
# command boots the app in its own process, so these are tagged :rails_app (rake
# sanitize leaves them out); the browser examples are also tagged :browser.
RSpec.describe "rails g llm_failover:chat_ui", :rails_app do
  include Capybara::RSpecMatchers

  screenshots = File.expand_path("../tmp/screenshots", __dir__)
  fixtures = File.expand_path("fixtures/files", __dir__)

  # One app for the examples: each command boots Rails (seconds on a busy machine).
  before(:context) do
    @primary = LlmFailover::Testing::FakeProvider.start
    @backup = LlmFailover::Testing::FakeProvider.start
    @app = ChatUiApp.new
    @app.rails!("generate", "llm_failover:install")
    @refusal = @app.run("bin/rails", "generate", "llm_failover:chat_ui")
    @before_refusal = @app.files
    @app.add_action_cable_and_turbo
    @generated = @app.rails!("generate", "llm_failover:chat_ui")
    @files = @app.files
    @again = @app.rails!("generate", "llm_failover:chat_ui")
    @files_again = @app.files
    @app.rails!("db:migrate")
    @app.use_fake_providers(primary_url: @primary.base_url(:openai), backup_url: @backup.base_url(:anthropic))
    @app.one_job_at_a_time
    @app.give_the_job_a_tool
    @app.start_server
  end

  after(:context) do
    @app&.stop
    [@primary, @backup].compact.each(&:stop)
  end

  it "refuses an app without ActionCable and turbo-rails, then writes the chat once; Puma serves it" do
    output, status = @refusal
    expect(status).not_to be_success
    expect(output).to include("nothing was written", 'require "action_cable/engine"', 'gem "turbo-rails"')
    expect(@before_refusal.keys).not_to include("app/controllers/chats_controller.rb", "config/cable.yml")
    expect(@files.keys - @before_refusal.keys).to include(
      "app/controllers/chats_controller.rb", "app/jobs/chat_answer_job.rb", "app/models/chat_turn.rb",
      "app/views/chats/show.html.erb", "app/views/chats/_turn.html.erb", "app/views/layouts/chats.html.erb",
      "config/cable.yml"
    )
    expect(@files.keys - @before_refusal.keys).to include(a_string_matching(%r{\Adb/migrate/\d+_add_request_id_to_messages\.rb\z}))
    expect(@generated).to include("route").and match(/attachments\s+kept in messages\.attachments_data/)
    expect(@again).to include("skip", "has the chat UI's routes").and match(/exist.*add_request_id_to_messages/)
    expect(@files_again).to eq(@files)

    turbo = @app.get("/chat_ui/turbo/turbo.min.js")
    expect(turbo.code).to eq("200")
    expect(turbo["content-type"]).to include("javascript")
    expect(turbo.body).to include("turbo-cable-stream-source")
    page = @app.get("/chats").body
    expect(page).to include("New chat", "/chat_ui/turbo/turbo.min.js")
    # Offline: every script and stylesheet comes from the app itself.
    expect(page.scan(/(?:src|href)="([^"]*)"/).flatten).to all(start_with("/"))
  end

  describe "in headless Chromium", :browser, skip: ChatUiBrowser.missing_reason do
    before(:context) do
      @session = ChatUiBrowser.session(@app.url)
      FileUtils.mkdir_p(screenshots)
    end

    after(:context) { @session&.driver&.quit }

    let(:page) { @session }
    let(:wait) { 60 } # seconds a matcher waits for the page: Chromium shares 2 cores with others

    # A new chat's page, with a recorder of every text the turns' answers showed (a
    # MutationObserver sees each update Turbo applies, however briefly it stayed).
    def open_new_chat
      page.visit("/chats")
      page.click_button("New chat")
      expect(page).to have_css("turbo-cable-stream-source[connected]", visible: :all, wait: wait)
      ChatUiBrowser.record_answers(page)
    end

    def ask(prompt)
      page.fill_in("prompt", with: prompt)
      page.click_button("Send")
    end

    # The app's messages rows (its SQLite database), read from this process.
    def stored_messages
      db = SQLite3::Database.new(File.join(@app.dir, "storage/development.sqlite3"), readonly: true)
      db.execute("SELECT id, role, content FROM messages ORDER BY id")
    ensure
      db&.close
    end

    # A real PNG of random pixels (it does not compress): width * height * 3 bytes or so.
    def noise_png(width, height)
      rows = Array.new(height) { "\0".b + Random.bytes(width * 3) }.join
      chunk = ->(type, data) { [data.bytesize].pack("N") + type + data + [Zlib.crc32(type + data)].pack("N") }
      "\x89PNG\r\n\x1A\n".b + chunk.call("IHDR", [width, height, 8, 2, 0, 0, 0].pack("N2C5")) +
        chunk.call("IDAT", Zlib::Deflate.deflate(rows)) + chunk.call("IEND", "")
    end

    def shown_answers
      ChatUiBrowser.shown_answers(page)
    end

    def expect_failover_turn(turn)
      expect(turn).to have_css(".answer", exact_text: "Backup answers in full.")
      expect(turn).to have_css(".label", text: "Answered by anthropic/claude-sonnet-4-6 after 1 failed attempt")
      expect(turn.all(".attempts li").map { |li| li.text.sub(/\s*\d+ ms\z/, "") })
        .to eq(["openai/gpt-4o: StreamInterruptedError", "anthropic/claude-sonnet-4-6: answered"])
    end

    it "shows the primary's words, clears them at the reset, then shows only the backup's answer" do
      @primary.enqueue({ chunks: ["The ", "primary ", "was ", "saying"], chunk_delay: 0.3, cut_after: 3 })
      @backup.enqueue({ chunks: ["Backup ", "answers ", "in full."], delay_first_token: 0.5, chunk_delay: 0.2 })
      open_new_chat
      ask("Where is the primary?")

      expect_failover_turn(page.find("#turns .turn.complete", wait: wait))
      page.save_screenshot(File.join(screenshots, "chat_ui_failover.png"))

      answers = shown_answers
      primary_words = answers.rindex { |a| a.start_with?("The primary") }
      backup_words = answers.index { |a| a.start_with?("Backup") }
      expect(primary_words).not_to be_nil, "the primary's words never showed: #{answers.inspect}"
      expect(backup_words).to be > primary_words
      # Between them the reset emptied the answer; no state ever held both answers.
      expect(answers[primary_words..backup_words]).to include("")
      expect(answers).to all(satisfy { |a| !(a.include?("primary") && a.include?("Backup")) })

      # A reload shows the same turn, its attempts from the attempt log.
      page.refresh
      expect_failover_turn(page.find("#turns .turn.complete", wait: wait))
    end

    it "shows the tool call the answer made and its result, live and after a reload" do
      @primary.enqueue({ text: "Let me look.", tool_calls: [{ name: "order_status", arguments: { "order" => 42 } }] },
                       { chunks: ["Order 42 ", "has shipped."], chunk_delay: 0.1 })
      open_new_chat
      ask("Where is order 42?")

      check = lambda do
        turn = page.find("#turns .turn.complete", wait: wait)
        expect(turn).to have_css(".answer", exact_text: "Order 42 has shipped.")
        step = turn.find(".tools li.tool.succeeded")
        expect(step).to have_css(".call", exact_text: 'order_status({"order":42})')
        expect(step).to have_css(".result", exact_text: '{"order":42,"status":"shipped"}')
      end
      check.call
      page.save_screenshot(File.join(screenshots, "chat_ui_tools.png"))
      page.refresh
      check.call
    end

    it "sends an image and a PDF with the prompt, each target in its own form, and shows them under it" do
      photo = File.join(fixtures, "photo.png")
      pdf = File.join(fixtures, "report.pdf")
      @primary.enqueue({ error: :insufficient_quota })
      @backup.enqueue({ text: "A gradient and a quarterly report." })
      primary_requests = @primary.requests.size
      open_new_chat
      page.fill_in("prompt", with: "What are these?")
      page.attach_file("files[]", [photo, pdf])
      page.click_button("Send")

      turn = page.find("#turns .turn.complete", wait: wait)
      expect(turn).to have_css(".answer", exact_text: "A gradient and a quarterly report.")
      # The primary (OpenAI) was sent an image_url part and a file part, the backup
      # (Anthropic) an image and a document block: the same bytes.
      sent = [@primary.requests[primary_requests], @backup.requests.last].map do |request|
        request.attachments.map { |a| [a.part["type"], a.mime_type, a.filename, a.data] }
      end
      expect(sent).to eq([[["image_url", "image/png", nil, File.binread(photo)],
                           ["file", "application/pdf", "report.pdf", File.binread(pdf)]],
                          [["image", "image/png", nil, File.binread(photo)],
                           ["document", "application/pdf", nil, File.binread(pdf)]]])
      expect(@primary.requests.size).to eq(primary_requests + 1)

      check = lambda do
        files = page.find("#turns .turn.complete", wait: wait).find(".files")
        expect(files.all("li").map { |li| [li[:class], li.text.strip] })
          .to eq([["file image", "photo.png"], ["file document", "report.pdf"]])
        image = files.find("li.image img.thumbnail")
        expect(image[:alt]).to eq("photo.png")
        # The thumbnail is the stored image itself, decoded by the browser.
        expect(page).to have_css("#turns .turn.complete .files img.thumbnail", wait: wait)
        expect(page.evaluate_script("document.querySelector('.files img.thumbnail').naturalWidth")).to eq(64)
        link = files.find("li.document a")[:href]
        served = @app.get(URI(link).path)
        expect([served.code, served["content-type"], served.body.b]).to eq(["200", "application/pdf", File.binread(pdf)])
      end
      check.call
      page.save_screenshot(File.join(screenshots, "chat_ui_files.png"))
      page.refresh
      check.call
    end

    it "says on the form why a file is refused (not an image or PDF, over the limit); nothing is stored or sent" do
      big = File.join(@app.dir, "tmp/big.png")
      File.binwrite(big, noise_png(200, 200)) # over the providers' max_attachment_bytes
      text = File.join(@app.dir, "tmp/notes.txt")
      File.write(text, "not an image")
      requests = [@primary.requests.size, @backup.requests.size]
      open_new_chat
      messages = stored_messages

      [[text, /attachment "notes.txt" is not a PNG, JPEG, GIF, WebP image or a PDF/],
       [big, /attachment "big.png" is #{File.size(big)} bytes, over the limit of 100000 bytes/]].each do |file, said|
        page.fill_in("prompt", with: "Read this")
        page.attach_file("files[]", file)
        page.click_button("Send")
        expect(page).to have_css("#prompt_form .error", text: said, wait: wait)
        expect(page).to have_field("prompt", with: "Read this")
        expect(page).to have_no_css("#turns .turn")
      end
      page.save_screenshot(File.join(screenshots, "chat_ui_file_refused.png"))
      expect(stored_messages).to eq(messages)
      expect([@primary.requests.size, @backup.requests.size]).to eq(requests)
    end

    it "asks a person before a call that needs approval: Approve runs it once and the answer goes on" do
      @primary.enqueue({ text: "I can refund it.", tool_calls: [{ name: "refund_order", arguments: { "order" => 42 } }] },
                       { chunks: ["Order 42 ", "is refunded."], chunk_delay: 0.1 })
      refunds = @app.refunds # one app for every example
      open_new_chat
      ask("Refund order 42")

      parked = lambda do
        turn = page.find("#turns .turn.approval", wait: wait)
        expect(turn).to have_css(".label", exact_text: "Waiting for your approval")
        step = turn.find(".tools li.tool.awaiting")
        expect(step).to have_css(".call", exact_text: 'refund_order({"order":42})')
        expect(turn).to have_no_button("Stop")
        step
      end
      parked.call
      page.refresh # parked in the database, not only on the page
      step = parked.call
      page.save_screenshot(File.join(screenshots, "chat_ui_approval.png"))
      expect(@app.refunds).to eq(refunds)
      step.click_button("Approve")

      turn = page.find("#turns .turn.complete", wait: wait)
      expect(turn).to have_css(".answer", exact_text: "Order 42 is refunded.")
      expect(turn).to have_css(".tools li.tool.succeeded .result", exact_text: "refunded order 42")
      expect(turn).to have_no_button("Approve")
      expect(@app.refunds).to eq([*refunds, "42"])
      page.refresh
      expect(page.find("#turns .turn.complete", wait: wait)).to have_css(".tools li.tool.succeeded", count: 1)
      expect(page).to have_css("#turns .turn", count: 1)
    end

    it "never runs a call a person denied: the model is told, and answers" do
      @primary.enqueue({ tool_calls: [{ name: "refund_order", arguments: { "order" => 7 } }] },
                       { text: "I did not refund order 7." })
      refunds = @app.refunds
      open_new_chat
      ask("Refund order 7")
      page.find("#turns .turn.approval .tools li.tool.awaiting", wait: wait).click_button("Deny")

      turn = page.find("#turns .turn.complete", wait: wait)
      expect(turn).to have_css(".answer", exact_text: "I did not refund order 7.")
      expect(turn).to have_css(".tools li.tool.denied.error .result", text: "The user denied this call")
      expect(@app.refunds).to eq(refunds)
      sent = @primary.requests.last.json["messages"].find { |m| m["role"] == "tool" }
      expect(sent["content"]).to start_with("The user denied this call")
    end

    it "drops an update of a turn that arrives after a newer one (ActionCable swapped them)" do
      open_new_chat
      stream = lambda do |seq, text|
        page.execute_script(<<~JS)
          document.body.insertAdjacentHTML("beforeend", `<turbo-stream action="append" target="turns"><template>
            <article id="turn_swapped" class="turn streaming" data-seq="#{seq}"><div class="answer">#{text}</div></article>
          </template></turbo-stream>`)
        JS
      end
      stream.call(2, "newer")
      expect(page).to have_css("#turn_swapped .answer", exact_text: "newer", wait: wait)
      stream.call(1, "older")
      stream.call(3, "newest")
      expect(page).to have_css("#turn_swapped .answer", exact_text: "newest", wait: wait)
      expect(shown_answers).to eq(%w[newer newest])
    end

    it "stops a slow answer with Stop and marks the partial answer stopped" do
      words = %w[A slow answer that would take a long while to arrive in full]
      @primary.enqueue({ chunks: words.map { |w| "#{w} " }, chunk_delay: 0.5 })
      backup_requests = @backup.requests.size
      open_new_chat
      ask("Tell me slowly")

      expect(page).to have_css("#turns .turn.streaming .answer", text: "A slow answer", wait: wait)
      page.click_button("Stop")

      turn = page.find("#turns .turn.cancelled", wait: wait)
      expect(turn).to have_css(".label", text: "Stopped (openai/gpt-4o)")
      expect(turn.find(".answer").text).to start_with("A slow answer")
      expect(turn.find(".answer").text).not_to include("in full")
      expect(turn).to have_css(".attempts li", text: "openai/gpt-4o: stopped")
      expect(turn).to have_no_button("Stop")
      page.save_screenshot(File.join(screenshots, "chat_ui_stop.png"))
      expect(@backup.requests.size).to eq(backup_requests)
    end

    it "stops an answer whose job still waits in the queue, before any request, and leaves the running one alone" do
      # The only job thread streams the first chat's answer while the second chat's waits.
      words = %w[The first chat keeps the only job thread busy for quite a while longer than the Stop takes]
      @primary.enqueue({ chunks: words.map { |w| "#{w} " }, chunk_delay: 0.5 })
      requests = @primary.requests.size
      open_new_chat
      first_chat = page.current_path
      ask("Keep the job thread busy")
      expect(page).to have_css("#turns .turn.streaming .answer", text: "The first", wait: wait)

      open_new_chat
      ask("Wait in the queue")
      page.find("#turns .turn.waiting", wait: wait).click_button("Stop")

      stopped = page.find("#turns .turn.cancelled", wait: wait)
      expect(stopped).to have_css(".label", text: "Stopped (openai/gpt-4o)")
      expect(stopped.find(".answer").text).to eq("")
      page.save_screenshot(File.join(screenshots, "chat_ui_stop_queued.png"))
      # The queued answer sent nothing; the first chat's was answered in full.
      expect(@primary.requests.size).to eq(requests + 1)
      page.visit(first_chat)
      expect(page).to have_css("#turns .turn.complete .answer", exact_text: words.join(" "), wait: wait)
    end
  end
end
