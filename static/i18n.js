/*
 * The page's words in Vietnamese and English, and the shopper's choice
 * between them. {name} marks a value that t() fills in; every key exists
 * in both languages.
 */

const WORDS = {
	vi: {
		locale: "vi-VN",
		title: "Flash sale",
		brand: "Flash sale",
		skip: "Tới danh sách sản phẩm",
		langLabel: "Ngôn ngữ",
		loading: "Đang tải đợt giảm giá…",
		noSale: "Chưa chọn đợt giảm giá. Hãy mở trang với ?sale=MÃ.",
		saleNotFound: "Không tìm thấy đợt giảm giá này.",
		saleUnavailable: "Chưa tải được đợt giảm giá; đang thử lại…",
		phaseUpcoming: "Bắt đầu sau",
		phaseOnSale: "Đang mở bán, kết thúc sau",
		phaseEnded: "Đợt giảm giá đã kết thúc",
		phaseStarting: "Đang mở bán…",
		days: "ngày",
		hours: "giờ",
		minutes: "phút",
		seconds: "giây",
		startsAt: "Bắt đầu lúc {time} (giờ của bạn)",
		clockSyncing: "Đang đồng bộ với đồng hồ máy chủ…",
		clockSynced: "Đồng hồ theo máy chủ (sai số ±{rtt} ms). Máy của bạn {dir} {offset}; đếm ngược đã được chỉnh.",
		clockAhead: "nhanh",
		clockBehind: "chậm",
		clockExact: "Đồng hồ theo máy chủ (sai số ±{rtt} ms); máy của bạn đúng giờ.",
		clockFallback: "Đồng hồ theo thời gian trong tài liệu đợt giảm giá (kém chính xác hơn). Máy của bạn {dir} {offset}.",
		announceStartsIn: "Đợt giảm giá bắt đầu sau {time}.",
		announceStarted: "Đợt giảm giá đã bắt đầu. Bạn có thể mua ngay.",
		announceMinute: "Còn một phút nữa là mở bán.",
		announceTen: "Còn mười giây.",
		accountTitle: "Tài khoản",
		signinLabel: "Mã người dùng (không bắt buộc)",
		signinHint: "Đăng nhập thử: để trống để nhận một mã ngẫu nhiên.",
		signinButton: "Đăng nhập",
		signinBusy: "Đang đăng nhập…",
		signinOff: "Đăng nhập thử đang tắt. Hãy đăng nhập qua cửa hàng.",
		signinFailed: "Không đăng nhập được: {reason}",
		signedInAs: "Đã đăng nhập:",
		signout: "Đăng xuất",
		needSignin: "Hãy đăng nhập để mua.",
		itemsTitle: "Sản phẩm",
		stockAll: "Còn {n} sản phẩm",
		stockSold: "Đã bán {p}%",
		stockOnly: "Chỉ còn {n} sản phẩm",
		stockOnlyOne: "Chỉ còn 1 sản phẩm",
		stockSoldOut: "Hết hàng",
		buyHaveOrder: "Bạn đã có đơn hàng",
		stateUpcoming: "Sắp mở bán",
		stateOnSale: "Đang bán",
		stateSoldOut: "Hết hàng",
		stateEnded: "Đã kết thúc",
		buy: "Mua ngay",
		buyNotYet: "Chưa mở bán",
		buyRetryIn: "Thử lại sau {s} giây",
		outBuying: "Đang gửi yêu cầu mua…",
		outProcessing: "Đang xử lý đơn hàng…",
		outReserved: "Đã giữ hàng cho bạn! Hãy thanh toán trong {left}.",
		outPaid: "Đã thanh toán. Cảm ơn bạn!",
		outSoldOut: "Rất tiếc, sản phẩm đã hết hàng.",
		outAlready: "Bạn đã có một đơn hàng trong đợt giảm giá này.",
		outAlreadyLink: "Xem đơn hàng của bạn",
		outExpired: "Đã hết thời gian thanh toán; hàng đã được trả lại.",
		outCancelled: "Đơn hàng đã được hủy.",
		outFailed: "Không ghi nhận được đơn hàng; hàng đã được trả lại. Hãy thử lại.",
		outRetry: "Hệ thống đang bận. Thử lại sau {s} giây.",
		outRetryNow: "Bạn có thể thử lại ngay.",
		outSignedOut: "Phiên đăng nhập đã hết. Hãy đăng nhập lại.",
		outNotStarted: "Đợt giảm giá chưa bắt đầu; đang chờ…",
		outBadLink: "Liên kết mua không còn hiệu lực.",
		outUnavailable: "Sản phẩm này không có trong đợt giảm giá.",
		outNetwork: "Mất kết nối. Hãy thử lại.",
		orderTitle: "Đơn hàng của bạn",
		orderItem: "Sản phẩm: {name}",
		orderId: "Mã đơn: {id}",
		payWithin: "Thời gian thanh toán còn lại",
		pay: "Thanh toán",
		paying: "Đang mở trang thanh toán…",
		cancel: "Hủy đơn",
		cancelConfirm: "Bấm lần nữa để hủy",
		cancelling: "Đang hủy…",
		liveSse: "Trạng thái cập nhật trực tiếp.",
		livePoll: "Không có kết nối trực tiếp; đang kiểm tra vài giây một lần.",
		liveConnecting: "Đang kết nối để nhận cập nhật…",
		payProcessing: "Đơn hàng đang được ghi nhận; sẽ thử lại sau giây lát…",
		orderGone: "Không tìm thấy đơn hàng này trong tài khoản của bạn.",
		footer: "Giá và tình trạng hàng cập nhật mỗi vài giây.",
	},
	en: {
		locale: "en-GB",
		title: "Flash sale",
		brand: "Flash sale",
		skip: "Skip to the items",
		langLabel: "Language",
		loading: "Loading the sale…",
		noSale: "No sale chosen. Open this page with ?sale=ID.",
		saleNotFound: "There is no such sale.",
		saleUnavailable: "Could not load the sale yet; retrying…",
		phaseUpcoming: "Starts in",
		phaseOnSale: "On sale now, ends in",
		phaseEnded: "This sale has ended",
		phaseStarting: "Opening the sale…",
		days: "days",
		hours: "hours",
		minutes: "min",
		seconds: "sec",
		startsAt: "Starts at {time} (your time)",
		clockSyncing: "Syncing with the server's clock…",
		clockSynced: "Synced with the server's clock (±{rtt} ms). Your device is {offset} {dir}; the countdown is corrected.",
		clockAhead: "ahead",
		clockBehind: "behind",
		clockExact: "Synced with the server's clock (±{rtt} ms); your device's clock is right.",
		clockFallback: "Clock taken from the sale document (less precise). Your device is {offset} {dir}.",
		announceStartsIn: "The sale starts in {time}.",
		announceStarted: "The sale has started. You can buy now.",
		announceMinute: "One minute to the start.",
		announceTen: "Ten seconds.",
		accountTitle: "Your account",
		signinLabel: "User id (optional)",
		signinHint: "Demo sign-in: leave it empty for a random id.",
		signinButton: "Sign in",
		signinBusy: "Signing in…",
		signinOff: "Demo sign-in is off. Sign in through the shop.",
		signinFailed: "Could not sign in: {reason}",
		signedInAs: "Signed in as",
		signout: "Sign out",
		needSignin: "Sign in to buy.",
		itemsTitle: "Items",
		stockAll: "{n} available",
		stockSold: "{p}% sold",
		stockOnly: "Only {n} left",
		stockOnlyOne: "Only 1 left",
		stockSoldOut: "Sold out",
		buyHaveOrder: "You have an order",
		stateUpcoming: "Upcoming",
		stateOnSale: "On sale",
		stateSoldOut: "Sold out",
		stateEnded: "Ended",
		buy: "Buy now",
		buyNotYet: "Not yet",
		buyRetryIn: "Try again in {s} s",
		outBuying: "Buying…",
		outProcessing: "Processing your order…",
		outReserved: "Reserved for you! Pay within {left}.",
		outPaid: "Paid. Thank you!",
		outSoldOut: "Sorry, this item is sold out.",
		outAlready: "You already have an order in this sale.",
		outAlreadyLink: "See your order",
		outExpired: "The payment time ran out; the unit went back on sale.",
		outCancelled: "The order was cancelled.",
		outFailed: "We could not record the order; the unit went back. Please try again.",
		outRetry: "We are busy. Try again in {s} s.",
		outRetryNow: "You can try again now.",
		outSignedOut: "You are signed out. Please sign in again.",
		outNotStarted: "The sale has not started yet; waiting…",
		outBadLink: "The purchase link is no longer valid.",
		outUnavailable: "This item is not part of the sale.",
		outNetwork: "Connection lost. Please try again.",
		orderTitle: "Your order",
		orderItem: "Item: {name}",
		orderId: "Order: {id}",
		payWithin: "Time left to pay",
		pay: "Pay now",
		paying: "Opening the payment page…",
		cancel: "Cancel order",
		cancelConfirm: "Press again to cancel",
		cancelling: "Cancelling…",
		liveSse: "Live status updates.",
		livePoll: "No live connection; checking every few seconds.",
		liveConnecting: "Connecting for live updates…",
		payProcessing: "The order is still being recorded; trying again in a moment…",
		orderGone: "This order is not in your account.",
		footer: "Prices and stock refresh every few seconds.",
	},
};

let current = "en";

/* The word for key in the current language, {name} filled from vars. */
export function t(key, vars) {
	const table = WORDS[current] || WORDS.en;
	let s = table[key] !== undefined ? table[key] : WORDS.en[key] || key;
	if (vars) {
		for (const [k, v] of Object.entries(vars))
			s = s.split("{" + k + "}").join(String(v));
	}
	return s;
}

export function language() {
	return current;
}

/* The query's ?lang=, then the shopper's last choice, then the browser's. */
export function pickLanguage() {
	const q = new URLSearchParams(location.search).get("lang");
	if (q === "vi" || q === "en")
		return q;
	const saved = localStorage.getItem("fs.lang");
	if (saved === "vi" || saved === "en")
		return saved;
	const langs = navigator.languages || [navigator.language || "en"];
	return langs.some((l) => /^vi\b/i.test(l)) ? "vi" : "en";
}

export function chooseLanguage(lang) {
	current = WORDS[lang] ? lang : "en";
	localStorage.setItem("fs.lang", current);
}
